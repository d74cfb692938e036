package store

import (
	"encoding/json"
	"strconv"
)

// JSON arrays of parameters: SQLite reads them with json_each, so a set of
// ids or names is one bound parameter and one cached statement whatever
// its size.

// jsonInts encodes ids as a JSON array for json_each.
func jsonInts(ids []int64) string {
	buf := make([]byte, 0, 8*len(ids)+2)
	buf = append(buf, '[')
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, id, 10)
	}
	return string(append(buf, ']'))
}

// jsonStrings encodes ss as a JSON array for json_each.
func jsonStrings(ss []string) string {
	buf := make([]byte, 0, 40*len(ss)+2)
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, s)
	}
	return string(append(buf, ']'))
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(s)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
