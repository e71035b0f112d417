//go:build !linux

package local

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
