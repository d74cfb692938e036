package store

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"testing"
)

// windowEndByMap is windowEnd as it was: the value decoded into a map,
// whose keys match exactly and whose last duplicate wins.
func windowEndByMap(value []byte) (end sql.NullFloat64, ok bool) {
	if !json.Valid(value) {
		return end, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(value, &fields) != nil {
		return end, true
	}
	if raw := fields["windowEnd"]; len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			end = sql.NullFloat64{Float64: f, Valid: true}
		}
	}
	return end, true
}

// FuzzWindowEndMatchesMapDecoding: windowEnd scans a state value in place
// and must read the same windowEnd as decoding it into a map did, for any
// bytes.
func FuzzWindowEndMatchesMapDecoding(f *testing.F) {
	for _, seed := range []string{
		`{"windowEnd":1767261660000}`,
		` { "acc" : {"windowEnd": 5, "x": [1, {"windowEnd": 6}]} , "windowEnd" : -2.5e3 } `,
		`{"windowEnd":"1"}`, `{"windowEnd":null}`, `{"windowEnd":1,"windowEnd":2}`,
		`{"window\u0045nd":7}`, `{"windowend":8}`, `{"a":"}\"windowEnd\":9","windowEnd":10}`,
		`{"a":[{"b":"]"}],"windowEnd":11}`, `[{"windowEnd":12}]`, `"windowEnd"`, `12`, `null`, `{}`,
		`{"windowEnd":1e400}`, `{"a":1`, ``, `{"windowEnd":true,"b":false}`, "{\"\\\\\":1,\"windowEnd\":13}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		got, gotOK := windowEnd(value)
		want, wantOK := windowEndByMap(value)
		if got != want || gotOK != wantOK {
			t.Errorf("windowEnd(%q) = %v %v, by a map %v %v", value, got, gotOK, want, wantOK)
		}
	})
}
