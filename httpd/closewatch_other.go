//go:build !linux

package httpd

import (
	"errors"
	"net"
)

// closeWatch has no implementation here: without one, parking.listen
// leaves every pop to wait inside net/http.
type closeWatch struct{}

type watchEvent uint8

const (
	hungUp watchEvent = 1 << iota
	readable
)

var errNoWatch = errors.New("closeWatch: not on this system")

func newCloseWatch() (*closeWatch, error) { return nil, errNoWatch }

func (*closeWatch) add(net.Conn, func(watchEvent)) (int32, error) { return -1, errNoWatch }
func (*closeWatch) swap(int32, func(watchEvent)) bool             { return false }
func (*closeWatch) remove(int32)                                  {}
func (*closeWatch) stop()                                         {}
