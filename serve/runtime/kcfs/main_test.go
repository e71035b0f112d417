package kcfs

import (
	"os"
	"testing"

	"streamscale/serve/runtime/ops"
)

// hostEnv makes the test binary a task host (TestMain), so tests need not
// build the serve binary.
const hostEnv = "KCFS_TEST_TASKHOST=1"

func TestMain(m *testing.M) {
	if os.Getenv("KCFS_TEST_TASKHOST") == "1" {
		if err := ServeStdio(ops.AppByName); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testHost is the HostConfig command of the tests' task host.
func testHost(cfg HostConfig) HostConfig {
	cfg.Command = []string{os.Args[0]}
	cfg.Env = []string{hostEnv}
	return cfg
}
