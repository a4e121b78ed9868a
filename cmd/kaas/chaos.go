package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/faultlog"
)

// The debug chaos endpoints (--debug-chaos, off by default): the chaos
// harness kills actors of a running broker and injects storage faults
// through them. Never enabled in a deployment: anyone reaching the HTTP
// port could stop partitions.

// chaosStorage turns the chaos hooks on when --debug-chaos is set. The disk
// engine's fsyncs already run through the fault injector (openStorage); a
// log engine without fsyncs (memory) is wrapped in it.
func (b *broker) chaosStorage(o storage.Opener) storage.Opener {
	if !b.cfg.DebugChaos {
		return o
	}
	actorsys.EnableChaos()
	b.log.Warn().Msg("--debug-chaos: actors can be killed and fsyncs slowed or failed over HTTP (/debug/chaos/)")
	if _, disk := o.(*disklog.Opener); disk {
		return o
	}
	return b.faults.Wrap(o)
}

// chaosKill is the answer of /debug/chaos/kill.
type chaosKill struct {
	Kind  string `json:"kind"`
	How   string `json:"how"`
	Actor string `json:"actor"`
}

func (b *broker) registerChaos(mux *http.ServeMux) {
	if !b.cfg.DebugChaos {
		return
	}
	// POST /debug/chaos/kill?kind=partition|group|connection|controller|share&how=stop|poison|panic[&topic=T]
	mux.HandleFunc("POST /debug/chaos/kill", func(w http.ResponseWriter, r *http.Request) {
		kind, how, topic := r.URL.Query().Get("kind"), r.URL.Query().Get("how"), r.URL.Query().Get("topic")
		// topic narrows partition actors to that topic's (their ids name it).
		ref, ok := b.system.ChaosTarget(func(id string) bool {
			return actorsys.ChaosKind(id) == kind && (topic == "" || strings.Contains(id, "/partition/"+topic+"/"))
		})
		if !ok {
			http.Error(w, fmt.Sprintf("no running %q actor (topic %q)", kind, topic), http.StatusNotFound)
			return
		}
		switch how {
		case "stop":
			ref.Stop()
		case "poison":
			ref.Poison()
		case "panic":
			ref.Send(&actorsys.Crash{})
		default:
			http.Error(w, fmt.Sprintf("how=%q: want stop, poison or panic", how), http.StatusBadRequest)
			return
		}
		b.log.Warn().Str("kind", kind).Str("how", how).Str("target", ref.String()).Msg("chaos: killing an actor")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(chaosKill{Kind: kind, How: how, Actor: ref.String()})
	})
	// POST /debug/chaos/fsync?delay=200ms&fail=0.2&for=5s
	mux.HandleFunc("POST /debug/chaos/fsync", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var f faultlog.Faults
		var d time.Duration
		var err error
		if s := q.Get("delay"); s != "" {
			if f.Delay, err = time.ParseDuration(s); err != nil {
				http.Error(w, "delay: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		if s := q.Get("fail"); s != "" {
			if f.FailRate, err = strconv.ParseFloat(s, 64); err != nil || f.FailRate < 0 || f.FailRate > 1 {
				http.Error(w, "fail: want a rate in [0, 1]", http.StatusBadRequest)
				return
			}
		}
		if s := q.Get("for"); s != "" {
			if d, err = time.ParseDuration(s); err != nil {
				http.Error(w, "for: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		b.faults.Set(f, d)
		b.log.Warn().Dur("delay", f.Delay).Float64("fail_rate", f.FailRate).Dur("for", d).Msg("chaos: fsync faults")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"delayed": b.faults.Delayed.Load(), "failed": b.faults.Failed.Load()})
	})
}

// exitProcess ends the process (a variable: tests of the essential watch
// replace it).
var exitProcess = os.Exit

// essentialExitCode is the exit status of a broker whose supervisor, group
// coordinator or controller died for good: Kubernetes restarts the pod.
const essentialExitCode = 70

// fatal ends the process unless it is already shutting down.
func (b *broker) fatal(what string) {
	if b.stopping.Load() {
		return
	}
	b.log.Error().Str("reason", what).Int("exit_code", essentialExitCode).Msg("an actor the broker cannot run without died; exiting")
	exitProcess(essentialExitCode)
}

// watchEssential ends the process when ref dies outside a shutdown.
func (b *broker) watchEssential(what string, ref actorsys.Ref) {
	if err := b.system.WatchEssential(ref, func() { b.fatal(what + " stopped") }); err != nil {
		b.log.Error().Err(err).Str("actor", what).Msg("watch essential actor")
	}
}
