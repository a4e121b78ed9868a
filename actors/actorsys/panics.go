package actorsys

import (
	"runtime/debug"
	"sync"
)

// Panic is a panic the process recovered from: an actor's (its supervisor
// then stops or restarts it) or a request handler's (answered
// UNKNOWN_SERVER_ERROR).
type Panic struct {
	// Where is the actor's id, or the API whose handler panicked.
	Where  string
	Reason any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

// panicWatchers are the functions WatchPanics registered.
var panicWatchers struct {
	sync.Mutex
	next int
	fns  map[int]func(Panic)
}

// WatchPanics calls fn for every panic recovered from now until stop is
// called. Recovered panics keep the broker up but are bugs all the same:
// the request fuzzer fails on any.
func WatchPanics(fn func(Panic)) (stop func()) {
	panicWatchers.Lock()
	defer panicWatchers.Unlock()
	if panicWatchers.fns == nil {
		panicWatchers.fns = map[int]func(Panic){}
	}
	id := panicWatchers.next
	panicWatchers.next++
	panicWatchers.fns[id] = fn
	return func() {
		panicWatchers.Lock()
		defer panicWatchers.Unlock()
		delete(panicWatchers.fns, id)
	}
}

// Recovered tells the watchers of a recovered panic. Call it in the
// deferred function that recovered, so the stack is the panicking one.
func Recovered(where string, reason any) {
	panicWatchers.Lock()
	fns := make([]func(Panic), 0, len(panicWatchers.fns))
	for _, fn := range panicWatchers.fns {
		fns = append(fns, fn)
	}
	panicWatchers.Unlock()
	if len(fns) == 0 {
		return
	}
	p := Panic{Where: where, Reason: reason, Stack: debug.Stack()}
	for _, fn := range fns {
		fn(p)
	}
}
