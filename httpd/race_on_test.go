//go:build race

package httpd_test

// raceBuild: the race detector makes every frame larger, so figures of
// stack use measured without it do not hold under it.
const raceBuild = true
