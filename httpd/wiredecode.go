package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// Push and ack bodies are most of what the server reads. Through
// encoding/json each of their bytes was scanned three or four times: the
// body into a RawMessage (a scan and a validity check), then the items
// again into structs of RawMessages (another check, another scan per
// field). Under load that was half of the server's CPU. wireDecoder reads
// such a body once: it checks the JSON as strictly as encoding/json while
// it goes, and keeps each field's value as a slice of the body, which the
// same checks as before (pushItems, ackIn.item) then read.
//
// What it accepts and how it answers stays what readJSON followed by
// json.Unmarshal did, quirks included: keys match field names exactly or
// else under Unicode case folding, a later duplicate key wins, an unknown
// key's value is skipped but must be valid, a top-level null is an object
// without members, and a body past the limit still decodes when its value
// ends within the limit. wiredecode_test.go keeps that old path and fuzzes
// the two against each other.

// maxWireDepth is encoding/json's bound on nesting, so that the same
// bodies are refused for being too deep.
const maxWireDepth = 10000

// wireDecoder scans one JSON body held in buf.
type wireDecoder struct {
	buf   []byte
	pos   int
	depth int
	// end is why buf ends: nil for the end of the body, otherwise the
	// error that cut the read short (a *http.MaxBytesError past the limit).
	// It is answered only when the value needs a byte beyond buf.
	end error
}

// readWireBody reads the request body up to the server's limit. A body past
// the limit, or a read that failed, returns what was read along with the
// error, for the decoder's end.
func (s *Handler) readWireBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return s.readWireBodyInto(w, r, nil)
}

// readWireBodyInto is readWireBody into buf's room when it has enough (a
// pooled buffer).
func (s *Handler) readWireBodyInto(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	limit := s.bodyLimit(r)
	body := http.MaxBytesReader(w, r.Body, limit)
	// Sized from Content-Length, so a body is read without growing: its
	// room was taken before the handler ran (see bindBody), and a body
	// declaring more than the limit never gets here.
	size := int64(512)
	if n := r.ContentLength; n > 0 && n <= limit {
		size = n + 1 // the extra byte lets the last read see EOF in place
	}
	if int64(cap(buf)) >= size {
		buf = buf[:0]
	} else {
		buf = make([]byte, 0, size)
	}
	if r.ContentLength < 0 {
		return readUnknownLength(body, buf, &s.blocks)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// unknownLengthBlock is the largest block readUnknownLength reads into.
const unknownLengthBlock = 1 << 20

// readUnknownLength reads a body of unknown length (chunked) into buf and
// then blocks, each as large as what came before it (4 KiB at least,
// unknownLengthBlock at most, so a small body takes little more than its
// size), and joins them once it has ended.
// Grown by append, a body's last two copies were held at once when it
// reached the limit (51 and 64 MiB at the default one); a body cut at
// the limit is answered 413 from the error alone, so its blocks are
// never joined.
// Its full-size blocks come from pool and go back to it once joined or
// cut (a nil pool keeps none).
func readUnknownLength(body io.Reader, buf []byte, pool *bodyBlocks) ([]byte, error) {
	blocks := [][]byte{buf}
	total := 0
	for {
		last := &blocks[len(blocks)-1]
		if len(*last) == cap(*last) {
			size := min(max(total, 4<<10), unknownLengthBlock)
			if size == unknownLengthBlock {
				blocks = append(blocks, pool.get())
			} else {
				blocks = append(blocks, make([]byte, 0, size))
			}
			last = &blocks[len(blocks)-1]
		}
		n, err := body.Read((*last)[len(*last):cap(*last)])
		*last = (*last)[:len(*last)+n]
		total += n
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			pool.put(blocks[1:])
			return nil, err
		case err != nil:
			out := join(blocks, total)
			pool.put(blocks[1:])
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
	}
}

// bodyBlocks keeps the full-size blocks of chunked bodies read and done
// with for the next chunked body to read into. Chunked bodies past the
// room for bodies in flight are read one after another (bodylimit.go);
// each allocating its own 64 MiB while the last one's was not yet
// collected took four 100 MB chunked bodies at once to 130 MB of RSS,
// where reusing them keeps the heap at one body's blocks. The pool's
// blocks are let go by the collector when no body takes them.
type bodyBlocks struct{ pool sync.Pool }

func (p *bodyBlocks) get() []byte {
	if p != nil {
		if b, ok := p.pool.Get().(*[]byte); ok {
			return (*b)[:0]
		}
	}
	return make([]byte, 0, unknownLengthBlock)
}

// put keeps the full-size ones of blocks, which no one may use after.
func (p *bodyBlocks) put(blocks [][]byte) {
	if p == nil {
		return
	}
	for _, b := range blocks {
		if cap(b) == unknownLengthBlock {
			b = b[:0]
			p.pool.Put(&b)
		}
	}
}

// join returns the bytes of blocks, total in all, in one slice (the first
// block itself when it holds them all).
func join(blocks [][]byte, total int) []byte {
	if len(blocks) == 1 {
		return blocks[0]
	}
	out := make([]byte, 0, total)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

// unexpectedEnd is the error for a value that needs more bytes than buf
// holds, as readJSON answered it: a body cut at the limit is too large,
// a failed read is a bad body, and so is a body that ends too soon.
func (d *wireDecoder) unexpectedEnd() error {
	switch {
	case d.end == nil:
		return fmt.Errorf("%w: unexpected end of JSON input", errBadBody)
	case isBodyBound(d.end):
		return d.end
	}
	return fmt.Errorf("%w: %v", errBadBody, d.end)
}

func (d *wireDecoder) syntaxError(what string) error {
	if d.pos >= len(d.buf) {
		return d.unexpectedEnd()
	}
	return fmt.Errorf("%w: invalid character %q %s at offset %d", errBadBody, d.buf[d.pos], what, d.pos)
}

func (d *wireDecoder) skipSpace() {
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek is the next byte, or 0 at the end of buf (0 starts no JSON token).
func (d *wireDecoder) peek() byte {
	if d.pos < len(d.buf) {
		return d.buf[d.pos]
	}
	return 0
}

// document reads the body's one value. An object's members go to member
// one at a time (see object); null is an object without members, as
// json.Decoder decoding into a struct had it; any other value is a bad
// body once it has been read.
func (d *wireDecoder) document(member func(key []byte) error) error {
	d.skipSpace()
	if d.pos == len(d.buf) {
		if d.end == nil {
			return errEmptyBody
		}
		return d.unexpectedEnd()
	}
	first := d.buf[d.pos]
	var err error
	if first == '{' {
		err = d.object(member)
	} else {
		err = d.value()
	}
	if err != nil {
		return err
	}
	// json.Decoder saw a top-level scalar end only on the byte after it,
	// or at the body's end.
	if first != '{' && first != '[' && d.pos == len(d.buf) && d.end != nil {
		return d.unexpectedEnd()
	}
	if first != '{' && first != 'n' {
		return fmt.Errorf("%w: the body is not a JSON object", errBadBody)
	}
	// Only whitespace may follow, as readJSON checks, up to the body's end:
	// a body running past the limit is too large even when its value ended
	// within it.
	d.skipSpace()
	if d.pos == len(d.buf) && d.end != nil {
		return d.unexpectedEnd()
	}
	if d.pos < len(d.buf) {
		return fmt.Errorf("%w: trailing data after JSON value", errBadBody)
	}
	return nil
}

// value reads and checks one value of any kind, leaving pos right after it.
func (d *wireDecoder) value() error {
	switch c := d.peek(); {
	case c == '{':
		return d.object(nil)
	case c == '[':
		return d.array(nil)
	case c == '"':
		_, _, err := d.str()
		return err
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return d.syntaxError("looking for beginning of value")
}

// enter moves past the '{' or '[' at pos, and past close too when the
// container is empty. It bounds the nesting as encoding/json does.
func (d *wireDecoder) enter(close byte) (empty bool, err error) {
	if d.depth++; d.depth > maxWireDepth {
		return false, fmt.Errorf("%w: exceeded max depth at offset %d", errBadBody, d.pos)
	}
	d.pos++
	d.skipSpace()
	if d.peek() == close {
		d.pos++
		d.depth--
		return true, nil
	}
	return false, nil
}

// next moves past what follows a member or an element: a comma, when more
// follow, or close, which ends the container.
func (d *wireDecoder) next(close byte) (more bool, err error) {
	d.skipSpace()
	switch d.peek() {
	case ',':
		d.pos++
		d.skipSpace()
		return true, nil
	case close:
		d.pos++
		d.depth--
		return false, nil
	}
	return false, d.syntaxError("after a member or an element")
}

// object reads the object at pos. For each member, after its key and
// colon, member reads the value and must leave pos right after it; a nil
// member skips every value. A key is handed over unquoted.
func (d *wireDecoder) object(member func(key []byte) error) error {
	empty, err := d.enter('}')
	for more := !empty; more && err == nil; {
		if d.peek() != '"' {
			return d.syntaxError("looking for beginning of object key string")
		}
		var key []byte
		if member != nil {
			key, err = d.key()
		} else {
			_, _, err = d.str() // a key nobody reads needs no unquoting
		}
		if err != nil {
			return err
		}
		d.skipSpace()
		if d.peek() != ':' {
			return d.syntaxError("after object key")
		}
		d.pos++
		d.skipSpace()
		if member != nil {
			err = member(key)
		} else {
			err = d.value()
		}
		if err == nil {
			more, err = d.next('}')
		}
	}
	return err
}

// array reads the array at pos, calling elem at the start of each element
// (elem reads it and leaves pos right after it); a nil elem skips them.
func (d *wireDecoder) array(elem func() error) error {
	empty, err := d.enter(']')
	for more := !empty; more && err == nil; {
		if elem != nil {
			err = elem()
		} else {
			err = d.value()
		}
		if err == nil {
			more, err = d.next(']')
		}
	}
	return err
}

// str reads the string at pos and returns its bytes between the quotes,
// still escaped, and whether it holds an escape. Bytes are not checked as
// UTF-8, as encoding/json's scanner does not; control characters and
// unknown escapes are refused as it refuses them.
func (d *wireDecoder) str() (raw []byte, escaped bool, err error) {
	start := d.pos + 1
	for i := start; i < len(d.buf); i++ {
		switch c := d.buf[i]; {
		case c == '"':
			d.pos = i + 1
			return d.buf[start:i], escaped, nil
		case c == '\\':
			escaped = true
			i++
			if i == len(d.buf) {
				d.pos = i
				return nil, false, d.unexpectedEnd()
			}
			switch d.buf[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					if i++; i == len(d.buf) || !isHex(d.buf[i]) {
						d.pos = i
						return nil, false, d.syntaxError("in \\u hexadecimal character escape")
					}
				}
			default:
				d.pos = i
				return nil, false, d.syntaxError("in string escape code")
			}
		case c < 0x20:
			d.pos = i
			return nil, false, d.syntaxError("in string literal")
		}
	}
	d.pos = len(d.buf)
	return nil, false, d.unexpectedEnd()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// key reads an object key and unquotes it. Keys rarely hold escapes, so
// those go through encoding/json, which gives exactly its unquoting.
func (d *wireDecoder) key() ([]byte, error) {
	start := d.pos
	raw, escaped, err := d.str()
	if err != nil || !escaped {
		return raw, err
	}
	var s string
	if err := json.Unmarshal(d.buf[start:d.pos], &s); err != nil {
		return nil, fmt.Errorf("%w: object key: %v", errBadBody, err)
	}
	return []byte(s), nil
}

// literal reads true, false or null.
func (d *wireDecoder) literal(word string) error {
	for i := range len(word) {
		if d.pos == len(d.buf) || d.buf[d.pos] != word[i] {
			return d.syntaxError("in literal " + word)
		}
		d.pos++
	}
	return nil
}

// number reads a number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *wireDecoder) number() error {
	if d.peek() == '-' {
		d.pos++
	}
	switch c := d.peek(); {
	case c == '0':
		d.pos++
	case '1' <= c && c <= '9':
		d.digits()
	default:
		return d.syntaxError("in numeric literal")
	}
	if d.peek() == '.' {
		d.pos++
		if !isDigit(d.peek()) {
			return d.syntaxError("after decimal point in numeric literal")
		}
		d.digits()
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.pos++
		if c := d.peek(); c == '+' || c == '-' {
			d.pos++
		}
		if !isDigit(d.peek()) {
			return d.syntaxError("in exponent of numeric literal")
		}
		d.digits()
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (d *wireDecoder) digits() {
	for d.pos < len(d.buf) && isDigit(d.buf[d.pos]) {
		d.pos++
	}
}

// rawFields reads an object, putting each member's raw value where field
// says (nowhere for an unknown key; a later duplicate wins), or null,
// which puts nothing. isObject is false for any other value, read all the
// same: json.Unmarshal refused such an element only after checking the
// rest of the body.
func (d *wireDecoder) rawFields(field func(key []byte) *json.RawMessage) (isObject bool, err error) {
	switch d.peek() {
	case 'n':
		return true, d.literal("null")
	case '{':
	default:
		return false, d.value()
	}
	return true, d.object(func(key []byte) error { return d.rawMember(key, field) })
}

// rawMember reads a member's value into where field says, if anywhere.
func (d *wireDecoder) rawMember(key []byte, field func(key []byte) *json.RawMessage) error {
	value, err := d.rawValue()
	if dst := field(key); err == nil && dst != nil {
		*dst = value
	}
	return err
}

// rawValue reads any value and returns its bytes, a slice of the body
// capped so that an append to it cannot write over the rest.
func (d *wireDecoder) rawValue() (json.RawMessage, error) {
	start := d.pos
	err := d.value()
	return d.buf[start:d.pos:d.pos], err
}

// stringsIn reads raw, a JSON array of strings and nulls (a null is "",
// as json.Unmarshal into []string made it), one element at a time,
// handing each to keep, and allocates nothing else: a body of twenty
// million empty strings decoded into a slice was 340 MB of string headers
// alone. ok is false unless raw is such an array; an error of keep's
// stops it and is returned.
func stringsIn(raw []byte, keep func(string) error) (ok bool, err error) {
	d := wireDecoder{buf: raw}
	var kept error
	err = d.array(func() error {
		v, err := d.rawValue()
		if err != nil {
			return err
		}
		str, _, isString := rawString(v)
		if !isString {
			return errBadBody
		}
		if kept = keep(str); kept != nil {
			return kept
		}
		return nil
	})
	if kept != nil {
		return true, kept
	}
	d.skipSpace()
	return err == nil && d.pos == len(raw), nil
}

// fieldIs reports whether key names the field name by encoding/json's
// rule: the same bytes, or else equal under Unicode case folding.
func fieldIs(key []byte, name string) bool {
	return string(key) == name || bytes.EqualFold(key, []byte(name))
}

// --- push --------------------------------------------------------------

// field is where the value of key goes, by pushItemIn's json tags.
func (it *pushItemIn) field(key []byte) *json.RawMessage {
	switch {
	case fieldIs(key, "queue"):
		return &it.Queue
	case fieldIs(key, "partition"):
		return &it.Partition
	case fieldIs(key, "payload"):
		return &it.Payload
	case fieldIs(key, "transactionId"):
		return &it.TransactionID
	case fieldIs(key, "traceId"):
		return &it.TraceID
	}
	return nil
}

// pushItemArray reads a push's items value; ok is false unless it is an
// array of objects and nulls, which is what json.Unmarshal into
// []pushItemIn accepted.
func (d *wireDecoder) pushItemArray() (items []pushItemIn, ok bool, err error) {
	if d.peek() != '[' {
		return nil, false, d.value()
	}
	ok = true
	// Sized by what the body could hold, at most 16 to begin with: a push
	// of one message is the common case, and 16 items of five raw fields
	// each weighed 2 KiB, more than the rest of that push's decoding.
	items = make([]pushItemIn, 0, min(16, 1+(len(d.buf)-d.pos)/256))
	err = d.array(func() error {
		if len(items) == broker.MaxPushItems {
			// Refused here, before the rest is decoded: a million tiny
			// items would cost hundreds of MB before the broker saw them.
			return broker.TooManyItems(len(items) + 1)
		}
		items = append(items, pushItemIn{})
		isObject, err := d.rawFields(items[len(items)-1].field)
		ok = ok && isObject
		return err
	})
	return items, ok, err
}

// decodePush reads a push body, {"items": [...]}. end is why body ends
// (see wireDecoder.end).
func decodePush(body []byte, end error) ([]pushItemIn, error) {
	d := wireDecoder{buf: body, end: end}
	var items []pushItemIn
	var ok bool
	err := d.document(func(key []byte) (err error) {
		if !fieldIs(key, "items") {
			return d.value()
		}
		items, ok, err = d.pushItemArray()
		return err
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &badRequest{"items array is required"}
	}
	return items, nil
}

// errNotItems is an items value that is not an array of objects and nulls.
var errNotItems = &badRequest{"items must be an array of objects"}

// pushItemsIn reads an items array held in a body that was already
// decoded (a transaction's push op, a stream cycle's push_items). It
// fails with errNotItems unless it is an array of objects and nulls, and
// with the broker's refusal when it holds more than broker.MaxPushItems.
func pushItemsIn(raw []byte) ([]pushItemIn, error) {
	d := wireDecoder{buf: raw}
	items, ok, err := d.pushItemArray()
	var in *broker.InputError
	if errors.As(err, &in) {
		return nil, err
	}
	if d.skipSpace(); err != nil || !ok || d.pos != len(raw) {
		return nil, errNotItems
	}
	return items, nil
}

// readPush reads and decodes a push body.
func (s *Handler) readPush(w http.ResponseWriter, r *http.Request) ([]pushItemIn, error) {
	body, end := s.readWireBody(w, r)
	return decodePush(body, end)
}

// --- ack ---------------------------------------------------------------

// field is where the value of key goes, by ackIn's json tags.
func (a *ackIn) field(key []byte) *json.RawMessage {
	switch {
	case fieldIs(key, "transactionId"):
		return &a.TransactionID
	case fieldIs(key, "partitionId"):
		return &a.PartitionID
	case fieldIs(key, "leaseId"):
		return &a.LeaseID
	case fieldIs(key, "status"):
		return &a.Status
	case fieldIs(key, "error"):
		return &a.Error
	case fieldIs(key, "consumerGroup"):
		return &a.ConsumerGroup
	}
	return nil
}

// decodeAck reads a single ack body, one ackIn object.
func decodeAck(body []byte, end error) (ackIn, error) {
	d := wireDecoder{buf: body, end: end}
	var in ackIn
	if err := d.document(func(key []byte) error { return d.rawMember(key, in.field) }); err != nil {
		return ackIn{}, err
	}
	return in, nil
}

// decodeAckBatch reads a batch ack body, {"consumerGroup": ...,
// "acknowledgments": [...]}, and returns the raw group for ackBatchItems.
func decodeAckBatch(body []byte, end error) (acks []ackIn, group json.RawMessage, err error) {
	d := wireDecoder{buf: body, end: end}
	ok := false
	err = d.document(func(key []byte) (err error) {
		switch {
		case fieldIs(key, "acknowledgments"):
			acks, ok, err = d.ackArray()
		case fieldIs(key, "consumerGroup"):
			group, err = d.rawValue()
		default:
			err = d.value()
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, &badRequest{"acknowledgments array is required"}
	}
	return acks, group, nil
}

// ackArray reads an acknowledgments value as pushItemArray reads items.
func (d *wireDecoder) ackArray() ([]ackIn, bool, error) {
	// Sized once, from the transactionIds left in the body (every
	// acknowledgment has one): growing the slice by appends copied a batch
	// of 100 several times.
	acks := make([]ackIn, 0, min(max(bytes.Count(d.buf[d.pos:], []byte(`"transactionId"`)), 1), maxAckPrealloc))
	return objectArray(d, acks, broker.MaxAckItems, "acknowledgments", (*ackIn).field)
}

// objectArray reads an array of objects and nulls into out, each
// object's members where field says; ok is false unless it is such an
// array, which is what json.Unmarshal into []T accepted. Past bound
// elements it stops with broker.TooMany(name, bound), as pushItemArray
// stops, before the rest is decoded.
func objectArray[T any](d *wireDecoder, out []T, bound int, name string, field func(*T, []byte) *json.RawMessage) ([]T, bool, error) {
	if d.peek() != '[' {
		return nil, false, d.value()
	}
	ok := true
	err := d.array(func() error {
		if len(out) == bound {
			return broker.TooMany(name, bound)
		}
		out = append(out, *new(T))
		elem := &out[len(out)-1]
		isObject, err := d.rawFields(func(key []byte) *json.RawMessage { return field(elem, key) })
		ok = ok && isObject
		return err
	})
	return out, ok, err
}

// maxAckPrealloc is the most entries ackArray allocates before it has
// read them.
const maxAckPrealloc = 1024

// --- transaction -------------------------------------------------------

// field is where the value of key goes, by txOpIn's json tags.
func (op *txOpIn) field(key []byte) *json.RawMessage {
	switch {
	case fieldIs(key, "type"):
		return &op.Type
	case fieldIs(key, "items"):
		return &op.Items
	}
	return op.ackIn.field(key)
}

// decodeTransaction reads a transaction body, {"operations": [...],
// "requiredLeases": ...}; ok is false unless operations is an array of
// objects and nulls. Past broker.MaxTransactionOps operations it stops
// with the broker's refusal, before the rest is decoded.
func decodeTransaction(body []byte, end error) (ops []txOpIn, leases json.RawMessage, ok bool, err error) {
	d := wireDecoder{buf: body, end: end}
	err = d.document(func(key []byte) (err error) {
		switch {
		case fieldIs(key, "operations"):
			ops, ok, err = d.txOpArray()
		case fieldIs(key, "requiredLeases"):
			leases, err = d.rawValue()
		default:
			err = d.value()
		}
		return err
	})
	return ops, leases, ok, err
}

// txOpArray reads an operations value as pushItemArray reads items.
func (d *wireDecoder) txOpArray() ([]txOpIn, bool, error) {
	return objectArray(d, []txOpIn(nil), broker.MaxTransactionOps, "operations", (*txOpIn).field)
}

// readAck and readAckBatch read and decode the two ack bodies.
func (s *Handler) readAck(w http.ResponseWriter, r *http.Request) (ackIn, error) {
	body, end := s.readWireBody(w, r)
	return decodeAck(body, end)
}

func (s *Handler) readAckBatch(w http.ResponseWriter, r *http.Request) ([]ackIn, json.RawMessage, error) {
	body, end := s.readWireBody(w, r)
	return decodeAckBatch(body, end)
}

// ackBatchRequest reads, decodes and checks a batch ack. Its body is read
// into a pooled buffer, given back once the items are made: their strings
// are copies, not views of the body.
func (s *Handler) ackBatchRequest(w http.ResponseWriter, r *http.Request) (string, []combtype.AckItem, error) {
	size := 512
	if n := r.ContentLength; n > 0 && n < maxPooledReply {
		size = int(n) + 1
	}
	body, end := s.readWireBodyInto(w, r, s.replies.get(size))
	defer s.replies.put(body)
	acks, rawGroup, err := decodeAckBatch(body, end)
	if err != nil {
		return "", nil, err
	}
	return ackBatchItems(acks, rawGroup)
}
