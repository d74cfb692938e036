//go:build !unix

package main

// selfCPUSeconds reports nothing where getrusage does not exist.
func selfCPUSeconds() (seconds float64, ok bool) { return 0, false }
