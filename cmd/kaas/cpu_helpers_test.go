package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// jiffy is the unit of /proc CPU times (USER_HZ, 100 on Linux).
const jiffy = 10 * time.Millisecond

// cpuSample is what the machine and each running broker had spent on CPU
// up to one moment, from /proc (Linux): BenchmarkHandoffs' figure of what a
// move costs the brokers and the machine, never an assertion.
type cpuSample struct {
	at                 time.Time
	busy, total, steal int64            // machine, in jiffies, over every CPU
	brokers            map[string]int64 // per running broker: user+system jiffies
}

// sampleCPU reads /proc/stat and every running broker's /proc/<pid>/stat;
// ok is false where /proc/stat cannot be read.
func (c *kaasCluster) sampleCPU() (s cpuSample, ok bool) {
	s = cpuSample{at: time.Now(), brokers: map[string]int64{}}
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, false
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return s, false
	}
	// guest and guest_nice (after steal) are counted in user and nice
	// already.
	for i, v := range f[1:9] {
		n, _ := strconv.ParseInt(v, 10, 64)
		s.total += n
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			s.steal = n
			s.busy += n
		default:
			s.busy += n
		}
	}
	for name, b := range c.brokers {
		select {
		case <-b.exited:
			continue
		default:
		}
		if j, ok := procCPU(b.cmd.Process.Pid); ok {
			s.brokers[name] = j
		}
	}
	return s, true
}

// procCPU is a process's user+system time so far, in jiffies.
func procCPU(pid int) (int64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name (which may hold spaces), from field 3:
	// utime and stime are fields 14 and 15.
	rest := string(raw)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}

// cpuSpent is what was spent between two samples: the machine's share busy
// and stolen (by the hypervisor), and the CPU time of the brokers running
// in both. A broker that exited since a is counted up to its exit, from its
// process state.
func (c *kaasCluster) cpuSpent(a, b cpuSample) (busy, steal float64, brokers time.Duration) {
	if total := b.total - a.total; total > 0 {
		busy = float64(b.busy-a.busy) / float64(total)
		steal = float64(b.steal-a.steal) / float64(total)
	}
	for name, before := range a.brokers {
		after, ok := b.brokers[name]
		if !ok {
			ps := c.brokers[name].cmd.ProcessState
			if ps == nil {
				continue
			}
			after = int64((ps.UserTime() + ps.SystemTime()) / jiffy)
		}
		brokers += time.Duration(after-before) * jiffy
	}
	return busy, steal, brokers
}
