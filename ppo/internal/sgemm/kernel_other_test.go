//go:build !amd64

package sgemm

func setAssembly(bool) {}
