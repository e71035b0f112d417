//go:build !unix

package policy

import "testing"

func mkfifo(t *testing.T, _ string) { t.Skip("policy: no FIFOs on this system") }
