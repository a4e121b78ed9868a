package testenv

import "syscall"

// sysProcAttr puts a child in its own process group (a terminal's Ctrl-C reaches only the
// owner, which stops apiserver before etcd) and kills it if the owner dies without Stop.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
