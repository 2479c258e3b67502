package scenarios

import "sync"

// Env is everything the scenarios need to reach one target.
type Env struct {
	Seed int64
}

var (
	envMu  sync.Mutex
	envCur *Env
)

func setEnv(e *Env) {
	envMu.Lock()
	envCur = e
	envMu.Unlock()
}

func currentEnv() *Env {
	envMu.Lock()
	defer envMu.Unlock()
	return envCur
}
