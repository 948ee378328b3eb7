package texttable

import "testing"

func TestPrintableLineKeepsTextOnOneLine(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"clean text is returned as it is", "node-a ✓ 91%", "node-a ✓ 91%"},
		{"a carriage return and an SGR", "\rFAKE \x1b[31mred", `\x0dFAKE \x1b[31mred`},
		{"a newline and a tab", "a\nb\tc", `a\x0ab\x09c`},
		{"an OSC title and a backspace", "\x1b]0;t\x07x\b", `\x1b]0;t\x07x\x08`},
		{"C1 and an invalid byte", "\u009b2J\xff", `\xc2\x9b2J\xff`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PrintableLine(tc.in); got != tc.want {
				t.Errorf("PrintableLine(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
