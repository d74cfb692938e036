package httpd

import (
	"bufio"
	"bytes"
	"encoding/json"
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
