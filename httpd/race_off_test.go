//go:build !race

package httpd_test

const raceBuild = false
