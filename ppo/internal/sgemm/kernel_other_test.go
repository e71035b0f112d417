//go:build !amd64 || purego

package sgemm

func setAssembly(bool) {}
