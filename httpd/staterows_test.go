package httpd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// stateRowOut is a state/get row as the reply was encoded before it was
// written row by row: the reference stateRowsWriter must match.
type stateRowOut struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt string          `json:"updated_at"`
}

// A state/get reply written row by row is, byte for byte, what
// json.Marshal made of the whole reply: keys with quotes, HTML and
// non-ASCII characters, values with spaces, HTML characters, U+2028 and
// nesting, and no rows at all.
func TestStateRowsAreWrittenAsJSONMarshalWroteThem(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	cases := [][]combtype.StateRow{
		nil,
		{{Key: "plain", Value: []byte(`{"a":1}`), UpdatedAt: at}},
		{
			{Key: "tumb:60\x1f2026-01-01T10:00:00.000Z\x1fp", Value: []byte(" { \"acc\" : { \"count\" : 2 , \"sum\" : [1, 2.5e3] } } "), UpdatedAt: at},
			{Key: `q"uote\back<html>&amp;`, Value: []byte(`"<b>&\u2028` + "\u2028" + `"`), UpdatedAt: at.Add(time.Second)},
			{Key: "ünïcødé 漢字", Value: []byte(`null`), UpdatedAt: at},
			{Key: "n", Value: []byte("[true,false,\n null, {\"x\":{}}]"), UpdatedAt: at},
		},
	}
	for _, rows := range cases {
		want := make([]stateRowOut, len(rows))
		for i, row := range rows {
			want[i] = stateRowOut{Key: row.Key, Value: row.Value, UpdatedAt: fmtMilli(row.UpdatedAt)}
		}
		wantBody, err := json.Marshal(map[string]any{"success": true, "rows": want})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		out := stateRowsWriter{w: bufio.NewWriter(&got)}
		out.begin()
		for _, row := range rows {
			if err := out.row(row); err != nil {
				t.Fatal(err)
			}
		}
		if err := out.end(); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(wantBody) {
			t.Errorf("rows written one by one:\n%s\nwant\n%s", got.String(), wantBody)
		}
	}
}

// A value is written compacted and HTML-escaped straight to the reply,
// byte for byte as json.Compact then json.HTMLEscape made it in buffers
// of their own (a 50 MB value took the server to 300 MB): random values
// with whitespace, escapes, HTML characters and line separators.
func TestAStateValueIsCompactedAndEscapedInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "<", ">", "&", "\u2028", "\u2029", "\u2027", "é", "漢", `\"`, `\\`, `\u003c`, `\n`, " "}
	var value func(depth int) string
	value = func(depth int) string {
		ws := func() string { return []string{"", " ", "\n\t", "\r\n  "}[rng.IntN(4)] }
		switch k := rng.IntN(6); {
		case k == 0 || depth > 3:
			var b strings.Builder
			b.WriteString(`"`)
			for range rng.IntN(8) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			b.WriteString(`"`)
			return b.String()
		case k == 1:
			return []string{"1", "-2.5e3", "true", "false", "null", "0"}[rng.IntN(6)]
		case k < 4:
			var parts []string
			for range rng.IntN(4) {
				parts = append(parts, ws()+value(depth+1)+ws())
			}
			return "[" + strings.Join(parts, ",") + "]"
		default:
			var parts []string
			for i := range rng.IntN(4) {
				parts = append(parts, ws()+fmt.Sprintf(`"k%d<&>"`, i)+ws()+":"+ws()+value(depth+1)+ws())
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	for range 2000 {
		v := []byte(" " + value(0) + "\n")
		if !json.Valid(v) {
			t.Fatalf("the test made invalid JSON: %s", v)
		}
		var compact, want bytes.Buffer
		if err := json.Compact(&compact, v); err != nil {
			t.Fatal(err)
		}
		json.HTMLEscape(&want, compact.Bytes())
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		if err := writeCompactEscaped(w, v); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if got.String() != want.String() {
			t.Fatalf("value %q written as\n%q\nwant\n%q", v, got.String(), want.String())
		}
	}
}
