// Package texttable aligns plain-text tables for nodegc's commands: a
// Table (a tabwriter whose lines lose their trailing blanks), a Grid that
// aligns the same way without a tabwriter for tables of 100,000 rows, a
// full-width rule row (the plan's cut line), and FitLines to cut lines to
// a terminal's width.
package texttable
