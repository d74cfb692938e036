package broker

import "testing"

// A forwarder's glob matches queue names with '/' in them as any other
// character: path.Match's '*' stops at '/', and queues such as "g/x"
// were never forwarded by the pattern "g*", with nothing to say so.
func TestAForwarderGlobMatchesSlashesLikeAnyCharacter(t *testing.T) {
	for _, c := range []struct {
		pattern, queue string
		want           bool
	}{
		{"g*", "gx", true},
		{"g*", "g/x", true},
		{"g*", "g.y/z", true},
		{"*", "fa/b", true},
		{"sensors.*", "sensors.a/b", true},
		{"sensors.*", "other.a", false},
		{"a/?", "a/b", true},
		{"a?b", "a/b", true},
		{"a[/]b", "a/b", true},
		{"a\\/b", "a/b", true},
		{"a/*/c", "a/b/c", true},
		{"a/*", "b/c", false},
	} {
		if got := MatchQueue(c.pattern, c.queue); got != c.want {
			t.Errorf("MatchQueue(%q, %q) = %v, want %v", c.pattern, c.queue, got, c.want)
		}
	}
}
