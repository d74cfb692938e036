package broker

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxPayloadDepth bounds the nesting of a payload, as encoding/json bounds
// what it decodes (10,000), so that a payload every JSON client can read
// is one comb stores: less the levels of the replies that carry it (a
// trace's data is three deep in a trace listing), so that what comb
// hands back can be read too.
const maxPayloadDepth = 9_990

// payloadChecker scans one payload for what a reader of it, or an
// upstream Queen storing it in a PostgreSQL jsonb column, cannot take:
// anything but one JSON value, bytes that are not UTF-8, the escape
// \u0000 (jsonb has no NUL character), an escaped UTF-16 surrogate
// without its other half, and a number beyond a double's range. It reads each byte once and allocates nothing:
// it runs on every pushed payload.
type payloadChecker struct {
	buf   []byte
	pos   int
	depth int
}

// checkPayload returns why p cannot be stored, or "" when it can.
func checkPayload(p []byte) string {
	c := payloadChecker{buf: p}
	c.space()
	if c.pos == len(p) {
		return "is empty; send JSON (null, a number, a string, an object or an array)"
	}
	if why := c.value(); why != "" {
		return why
	}
	c.space()
	if c.pos != len(p) {
		return fmt.Sprintf("is not valid JSON: data after the value at byte %d", c.pos)
	}
	return ""
}

func (c *payloadChecker) space() {
	for c.pos < len(c.buf) {
		switch c.buf[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *payloadChecker) bad(what string) string {
	if c.pos >= len(c.buf) {
		return "is not valid JSON: it ends too soon"
	}
	return fmt.Sprintf("is not valid JSON: unexpected %q %s at byte %d", c.buf[c.pos], what, c.pos)
}

func (c *payloadChecker) value() string {
	if c.pos >= len(c.buf) {
		return c.bad("")
	}
	switch b := c.buf[c.pos]; {
	case b == '{':
		return c.container('}')
	case b == '[':
		return c.container(']')
	case b == '"':
		return c.str()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	}
	return c.bad("looking for the beginning of a value")
}

// container reads an object (close '}') or an array (close ']').
func (c *payloadChecker) container(close byte) string {
	if c.depth++; c.depth > maxPayloadDepth {
		return fmt.Sprintf("is nested deeper than %d levels", maxPayloadDepth)
	}
	c.pos++
	c.space()
	if c.pos < len(c.buf) && c.buf[c.pos] == close {
		c.pos++
		c.depth--
		return ""
	}
	for {
		if close == '}' {
			if c.pos >= len(c.buf) || c.buf[c.pos] != '"' {
				return c.bad("looking for an object key")
			}
			if why := c.str(); why != "" {
				return why
			}
			c.space()
			if c.pos >= len(c.buf) || c.buf[c.pos] != ':' {
				return c.bad("after an object key")
			}
			c.pos++
			c.space()
		}
		if why := c.value(); why != "" {
			return why
		}
		c.space()
		if c.pos >= len(c.buf) {
			return c.bad("")
		}
		switch c.buf[c.pos] {
		case ',':
			c.pos++
			c.space()
		case close:
			c.pos++
			c.depth--
			return ""
		default:
			return c.bad("after a member or an element")
		}
	}
}

// str reads a string, refusing control characters, bad escapes, bytes
// that are not UTF-8, \u0000 and unpaired surrogates.
func (c *payloadChecker) str() string {
	i := c.pos + 1
	for i < len(c.buf) {
		// Most of a payload is plain ASCII inside strings: skipped first,
		// a table lookup a byte.
		for i < len(c.buf) && plainByte[c.buf[i]] {
			i++
		}
		if i == len(c.buf) {
			break
		}
		b := c.buf[i]
		switch {
		case b == '"':
			c.pos = i + 1
			return ""
		case b == '\\':
			if i+1 >= len(c.buf) {
				c.pos = len(c.buf)
				return c.bad("")
			}
			switch c.buf[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(c.buf, i+2)
				if !ok {
					c.pos = i
					return c.bad("in a \\u escape")
				}
				switch {
				case r == 0:
					return fmt.Sprintf("holds \\u0000 at byte %d: JSON stores (PostgreSQL jsonb, so Queen) cannot hold a NUL character", i)
				case r >= 0xD800 && r < 0xDC00: // a high surrogate needs a low one next
					lo, ok := rune(0), false
					if i+7 < len(c.buf) && c.buf[i+6] == '\\' && c.buf[i+7] == 'u' {
						lo, ok = hex4(c.buf, i+8)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return fmt.Sprintf("holds an unpaired UTF-16 surrogate escape at byte %d", i)
					}
					i += 12
				case r >= 0xDC00 && r <= 0xDFFF:
					return fmt.Sprintf("holds an unpaired UTF-16 surrogate escape at byte %d", i)
				default:
					i += 6
				}
			default:
				c.pos = i + 1
				return c.bad("in a string escape")
			}
		case b < 0x20:
			c.pos = i
			return c.bad("(a control character) in a string")
		case b < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(c.buf[i:])
			if r == utf8.RuneError && n <= 1 {
				return fmt.Sprintf("is not UTF-8: byte %#x at %d", b, i)
			}
			i += n
		}
	}
	c.pos = len(c.buf)
	return c.bad("")
}

// plainByte holds the bytes a string may hold as they are, with no
// further look: printable ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// hex4 reads the four hexadecimal digits at buf[i:].
func hex4(buf []byte, i int) (rune, bool) {
	if i+4 > len(buf) {
		return 0, false
	}
	var r rune
	for _, b := range buf[i : i+4] {
		switch {
		case '0' <= b && b <= '9':
			r = r<<4 | rune(b-'0')
		case 'a' <= b && b <= 'f':
			r = r<<4 | rune(b-'a'+10)
		case 'A' <= b && b <= 'F':
			r = r<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func (c *payloadChecker) literal(word string) string {
	if len(c.buf)-c.pos < len(word) || string(c.buf[c.pos:c.pos+len(word)]) != word {
		return c.bad("in a literal")
	}
	c.pos += len(word)
	return ""
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? and refuses
// a number too large for a double, such as 1e400: Go's encoding/json (so
// Queen's Go client) fails to decode a payload holding one, JavaScript
// reads it as Infinity and writes it back as null, and Queen refuses it.
func (c *payloadChecker) number() string {
	start := c.pos
	if c.peek() == '-' {
		c.pos++
	}
	switch b := c.peek(); {
	case b == '0':
		c.pos++
	case '1' <= b && b <= '9':
		c.digits()
	default:
		return c.bad("in a number")
	}
	if c.peek() == '.' {
		c.pos++
		if !isDigit(c.peek()) {
			return c.bad("after a decimal point")
		}
		c.digits()
	}
	exp := false
	if b := c.peek(); b == 'e' || b == 'E' {
		exp = true
		c.pos++
		if b := c.peek(); b == '+' || b == '-' {
			c.pos++
		}
		if !isDigit(c.peek()) {
			return c.bad("in an exponent")
		}
		c.digits()
	}
	// Only an exponent or more digits than a double's 308 can overflow;
	// the common number costs no parse.
	if n := c.buf[start:c.pos]; (exp || len(n) > 308) && overflows(n) {
		return fmt.Sprintf("holds the number %.40s at byte %d, beyond the range of a double (about 1.8e308): JSON readers cannot hold it", n, start)
	}
	return ""
}

func overflows(n []byte) bool {
	_, err := strconv.ParseFloat(string(n), 64)
	return err != nil
}

func (c *payloadChecker) peek() byte {
	if c.pos < len(c.buf) {
		return c.buf[c.pos]
	}
	return 0
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func (c *payloadChecker) digits() {
	for c.pos < len(c.buf) && isDigit(c.buf[c.pos]) {
		c.pos++
	}
}
