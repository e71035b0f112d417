package local

import "syscall"

// sysProcAttr kills the child when the parent dies.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
