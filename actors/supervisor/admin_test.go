package supervisor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAdminError: a KafkaTopic write that ran out of the admin timeout,
// in the apiserver or in client-go's rate limiter, is REQUEST_TIMED_OUT;
// anything else the apiserver answers is UNKNOWN_SERVER_ERROR.
func TestAdminError(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(live)
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want int16
	}{
		{"deadline passed", done, errors.New("create KafkaTopic t: context canceled"), kerr.RequestTimedOut.Code},
		{"deadline wrapped", live, fmt.Errorf("create KafkaTopic t: %w", context.DeadlineExceeded), kerr.RequestTimedOut.Code},
		{"rate limiter", live, errors.New("create KafkaTopic t: client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline"), kerr.RequestTimedOut.Code},
		{"forbidden", live, errors.New(`create KafkaTopic t: kafkatopics.kaas.dev is forbidden`), kerr.UnknownServerError.Code},
	} {
		code, msg := adminError(tc.ctx, tc.err)
		if code != tc.want || msg == "" {
			t.Errorf("%s: code %d %q, want %d", tc.name, code, msg, tc.want)
		}
	}
}
