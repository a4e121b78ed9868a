package kafkacli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestStreamsResetRefusals: the flag combinations Kafka's StreamsResetter
// refuses are refused before any connection (the bootstrap address is
// unreachable), with a message naming the flags.
func TestStreamsResetRefusals(t *testing.T) {
	bs := []string{"--bootstrap-server", "127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input-topics", "a"}, "missing required option(s) [application-id]"},
		{[]string{"--application-id", "app", "--to-earliest", "--to-latest"}, `option "[to-earliest]" can't be used with option "[to-latest]"`},
		{[]string{"--application-id", "app", "--shift-by", "1", "--to-offset", "2"}, `option "[to-offset]" can't be used with option "[shift-by]"`},
		{[]string{"--application-id", "app", "--from-file", "f", "--by-duration", "PT1H"}, `option "[by-duration]" can't be used with option "[from-file]"`},
		{[]string{"--application-id", "app", "--config-file", "a", "--command-config", "b"}, `option "[config-file]" can't be used with option "[command-config]"`},
		{[]string{"--application-id", "app", "--to-datetime", "yesterday"}, "--to-datetime:"},
		{[]string{"--application-id", "app", "--by-duration", "1h"}, "--by-duration:"},
		{[]string{"--application-id", "app", "--input-topics", "a,,b"}, "--input-topics"},
		{[]string{"--application-id", "app", "--bootstrap-servers", "h:1"}, "--bootstrap-servers is not supported"},
		{[]string{"--application-id", "app", "--execute"}, "-execute"},
		{[]string{"--application-id", "app", "stray"}, `unexpected argument "stray"`},
	} {
		var out, errb bytes.Buffer
		err := runStreamsReset(context.Background(), append(append([]string{}, bs...), c.args...), nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error()+errb.String(), c.want) {
			t.Errorf("%q: got %v (stderr %q), want %q", c.args, err, errb.String(), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%q: printed %q", c.args, out.String())
		}
	}
}
