package pgprovision

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// ErrNoDocker is wrapped by DockerAvailable when no Docker engine answers.
var ErrNoDocker = errors.New("no Docker engine answered")

// dockerProbeMax caps the engine probe: when no engine runs, discovery must cost
// at most this, never the full StartTimeout.
const dockerProbeMax = 3 * time.Second

// DockerAvailable reports whether a Docker engine answers a ping within timeout
// (capped at 3s). The error wraps ErrNoDocker and says why.
func DockerAvailable(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 || timeout > dockerProbeMax {
		timeout = dockerProbeMax
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The probe runs in its own goroutine so that a discovery step which ignores
	// the context (socket lookups, config reads) still cannot hang the caller.
	done := make(chan error, 1)
	go func() {
		cli, err := testcontainers.NewDockerClientWithOpts(pctx)
		if err != nil {
			done <- err
			return
		}
		defer cli.Close()
		_, err = cli.Ping(pctx, client.PingOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%w (%s)", ErrNoDocker, oneLine(err.Error()))
		}
		return nil
	case <-pctx.Done():
		return fmt.Errorf("%w (no answer within %s)", ErrNoDocker, timeout)
	}
}

// startDocker starts a PostgreSQL container when a Docker engine answers.
func startDocker(ctx context.Context, opt Options) (*server, error) {
	if err := DockerAvailable(ctx, opt.ConnectTimeout); err != nil {
		return nil, err
	}
	pw, err := randomPassword()
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, opt.StartTimeout)
	defer cancel()
	opt.Logger.Info("postgres: starting container", "image", opt.DockerImage)
	ctr, err := tcpostgres.Run(sctx, opt.DockerImage,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword(pw),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithLogger(slogPrintf{opt.Logger}),
	)
	// As in testcontainers.CleanupContainer: a container may exist even when Run
	// failed, so its termination is arranged before the error is looked at.
	terminate := func(ctx context.Context, _ bool) error {
		if ctr == nil {
			return nil
		}
		return testcontainers.TerminateContainer(ctr, testcontainers.StopContext(ctx))
	}
	if err != nil {
		return nil, errors.Join(
			fmt.Errorf("engine answered but the %s container did not start: %s", opt.DockerImage, oneLine(scrubText(err.Error(), pw))),
			terminate(context.WithoutCancel(ctx), false))
	}
	connURL, err := ctr.ConnectionString(sctx, "sslmode=disable")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("container connection string: %s", scrubText(err.Error(), pw)), terminate(context.WithoutCancel(ctx), false))
	}
	id := ctr.GetContainerID()
	if len(id) > 12 {
		id = id[:12]
	}
	desc := fmt.Sprintf("docker container %s (%s) at %s", id, opt.DockerImage, serverOnly(connURL))
	return &server{
		adminURL: connURL,
		method:   MethodDocker,
		desc:     desc,
		stop:     terminate,
		keepNote: func() string {
			return "the container is removed at cleanup, so a kept database does not outlive it"
		},
	}, nil
}

func randomPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func scrubText(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, redacted)
}

// oneLine keeps an error on one line so the combined "tried" message stays readable.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// slogPrintf routes testcontainers' Printf logging to slog at debug level
// instead of its default of stderr.
type slogPrintf struct{ l *slog.Logger }

func (s slogPrintf) Printf(format string, v ...any) {
	s.l.Debug("testcontainers: " + fmt.Sprintf(format, v...))
}
