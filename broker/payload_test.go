package broker

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/comb-broker/comb/combtype"
)

func TestCheckPayload(t *testing.T) {
	for _, ok := range []string{`null`, `1`, `-0.5e+3`, `"s"`, ` {"a": [1, true, false, null, {"b": "é"}]} `,
		`"\ud83d\ude00"`, `"\u0001"`, `"tab\t"` /* an escaped tab */, `[]`, `{}`,
		`1e308`, `-1.7976931348623157e308`, `1e-400`, `[0.1E+2]`} {
		if ok == `"tab\t"` {
			ok = `"tab\\t"`
		}
		if why := checkPayload([]byte(ok)); why != "" {
			t.Errorf("%s: %s, want it accepted", ok, why)
		}
	}
	for _, c := range []struct{ in, why string }{
		{`hello`, "is not valid JSON"},
		{`{"a":1`, "is not valid JSON: it ends too soon"},
		{`1 2`, "data after the value"},
		{`   `, "is empty"},
		{`{"s":"a\u0000b"}`, `holds \u0000`},
		{`{"\u0000":1}`, `holds \u0000`},
		{`"\ud800"`, "unpaired UTF-16 surrogate"},
		{`"\udc00\ud800"`, "unpaired UTF-16 surrogate"},
		{"\"\xff\"", "is not UTF-8"},
		{"\"a\tb\"", "control character"},
		{`1e400`, "beyond the range of a double"},
		{`{"x":[-1.8E+308]}`, "beyond the range of a double"},
		{"1" + strings.Repeat("0", 309), "beyond the range of a double"},
		{strings.Repeat("[", maxPayloadDepth+1) + strings.Repeat("]", maxPayloadDepth+1), "nested deeper"},
	} {
		if why := checkPayload([]byte(c.in)); !strings.Contains(why, c.why) {
			t.Errorf("%.40q: %q, want it refused as %q", c.in, why, c.why)
		}
	}
}

// unstorable finds what checkPayload refuses in valid JSON: \u0000 and
// surrogate escapes (paired ones are checked apart).
var surrogateOrNUL = regexp.MustCompile(`\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})`)

// FuzzCheckPayload holds checkPayload to encoding/json's idea of valid
// JSON: it never accepts what json.Valid refuses, and refuses what
// json.Valid accepts only for the reasons it names (not UTF-8, a NUL or a
// surrogate escape, too deep).
func FuzzCheckPayload(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"x\u0000"`, `"\ud83d\ude00"`, `1e5`, `[`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		why := checkPayload(in)
		valid := json.Valid(in)
		if why == "" && !valid {
			t.Fatalf("%q accepted, json.Valid refuses it", in)
		}
		if why != "" && valid && utf8.Valid(in) && !surrogateOrNUL.Match(in) && !strings.Contains(why, "nested") && !strings.Contains(why, "double") {
			t.Fatalf("%q refused (%s), json.Valid accepts it", in, why)
		}
	})
}

func BenchmarkCheckPayload(b *testing.B) {
	p := []byte(`{"orderId":"ord-00000042","customerId":"cus-000042","items":[{"sku":"SKU-00042","qty":3,"price":52.99},{"sku":"SKU-00294","qty":1,"price":4.50}],"currency":"EUR","total":57.49,"status":"placed","ts":1764547200042}`)
	b.SetBytes(int64(len(p)))
	b.Run("checkPayload", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			if checkPayload(p) != "" {
				b.Fatal("refused")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			if !json.Valid(p) {
				b.Fatal("refused")
			}
		}
	})
}

// BenchmarkCheckPushItems is the broker's check of a push of 100 items of
// ~200-byte payloads, what BenchmarkPushHTTP's batch=100 sends.
func BenchmarkCheckPushItems(b *testing.B) {
	items := make([]combtype.PushItem, 100)
	for i := range items {
		items[i] = combtype.PushItem{Queue: "bench", TxnID: "0198c0de-7a1b-7c2d-8e3f-0123456789ab",
			Payload: []byte(`{"i":42,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)}
	}
	for b.Loop() {
		if err := CheckPushItems(items); err != nil {
			b.Fatal(err)
		}
	}
}
