//go:build !unix

package api

import "testing"

func mkfifo(t *testing.T, _ string) { t.Skip("api: no FIFOs on this system") }
