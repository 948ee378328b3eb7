package wire

import "bytes"

// span is where the value of lists[list] is in the document: data[key]
// is the quote that opens its key, data[open] its '[' and data[close]
// its ']'. Its pieces, the elements between two cuts (a cut is a comma
// between two elements, in neither piece), go to findSpans' cut.
type span struct {
	list             int
	key, open, close int
}

// findSpans reads the document once, as a JSON tokenizer does (strings
// with their escapes, and nesting depth), whatever its whitespace, and
// returns where each list's value is, in document order: the value of
// the first top-level key spelt exactly as the list's name, when it is
// an array. Each value is cut after the first comma between two of its
// elements at or past size bytes from the last cut. A list not found is
// left to the rest. False when the document is not an object the
// tokenizer can read to its closing brace; the scan does not check the
// rest of the grammar: the pieces' and the rest's own decodes do. cut is
// called with each piece as soon as it is cut, in document order.
func findSpans(data []byte, lists []splitList, size int, cut func(list, lo, hi int)) ([]span, bool) {
	sc := scanner{data: data, cut: cut}
	if !sc.skipSpace() || data[sc.i] != '{' {
		return nil, false
	}
	sc.i++
	var spans []span
	for {
		if !sc.skipSpace() {
			return nil, false
		}
		switch data[sc.i] {
		case '}':
			return spans, true
		case ',':
			sc.i++
			continue
		case '"':
		default:
			return nil, false
		}
		key := sc.i
		if !sc.skipString() || !sc.skipSpace() || data[sc.i] != ':' {
			return nil, false
		}
		sc.i++
		if !sc.skipSpace() {
			return nil, false
		}
		list := listNamed(lists, spans, data[key+1:sc.keyEnd])
		if list < 0 || data[sc.i] != '[' {
			if !sc.skipValue() {
				return nil, false
			}
			continue
		}
		sp := span{list: list, key: key, open: sc.i}
		if !sc.scanList(&sp, size) {
			return nil, false
		}
		spans = append(spans, sp)
	}
}

// listNamed is the index of the list named name, or -1 when none is or
// its span is already taken (a repeated key is left to the rest).
func listNamed(lists []splitList, spans []span, name []byte) int {
	for i, l := range lists {
		if string(name) == l.name() {
			for _, sp := range spans {
				if sp.list == i {
					return -1
				}
			}
			return i
		}
	}
	return -1
}

// scanner walks a JSON document; i is the next byte to read, keyEnd the
// closing quote of the last string skipped.
type scanner struct {
	data   []byte
	i      int
	keyEnd int
	cut    func(list, lo, hi int)
}

// skipSpace moves past JSON whitespace; false at the end of the data.
func (s *scanner) skipSpace() bool {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return true
		}
	}
	return false
}

// skipString moves past the string whose opening quote is at i: to the
// first quote after it that no backslash escapes (an odd run of
// backslashes before a quote escapes it).
func (s *scanner) skipString() bool {
	at := s.i + 1
	for {
		k := bytes.IndexByte(s.data[at:], '"')
		if k < 0 {
			return false
		}
		q := at + k
		n := 0
		for q-1-n > s.i && s.data[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			s.keyEnd, s.i = q, q+1
			return true
		}
		at = q + 1
	}
}

// skipValue moves past the value at i: a scalar up to the next ',' or
// closing bracket at its own depth, or a nested array or object to its
// matching close.
func (s *scanner) skipValue() bool {
	depth := 0
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '"':
			if !s.skipString() {
				return false
			}
			if depth == 0 {
				return true
			}
			continue
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return true
			}
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		case ',':
			if depth == 0 {
				return true
			}
		}
		s.i++
	}
	return false
}

// scanList moves past the array whose '[' is at i, recording its close
// in sp and handing each piece to s.cut: a piece ends at the first comma
// between two elements (at the array's own depth) at or past size bytes
// from the piece's start. The array must close with ']': the rest is decoded
// without its brackets, so they are checked here; what lies between
// them is checked by the pieces' decodes.
func (s *scanner) scanList(sp *span, size int) bool {
	s.i++
	lo, depth := s.i, 0
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '"':
			if !s.skipString() {
				return false
			}
			continue
		case '[', '{':
			depth++
		case ']', '}':
			if depth > 0 {
				depth--
				break
			}
			if s.data[s.i] != ']' {
				return false // the close is hidden from the rest: it must be right
			}
			sp.close = s.i
			s.cut(sp.list, lo, s.i)
			s.i++
			return true
		case ',':
			if depth == 0 && s.i-lo >= size {
				s.cut(sp.list, lo, s.i)
				lo = s.i + 1
			}
		}
		s.i++
	}
	return false
}
