//go:build linux

package bwrap

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in a sandbox: the kernel's keyrings, eBPF,
// perf events, userfaultfd and io_uring (attack surface a command does not
// need), and what administers the machine (modules, mounts, swap, clocks,
// reboot), which the sandbox's missing capabilities refuse already.
// Nested user namespaces are refused by bwrap's --disable-userns.
var deniedSyscalls = []uintptr{
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_KEXEC_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_SETNS,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SYSLOG, unix.SYS_ACCT,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_QUOTACTL,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
}

// x32 marks the syscalls of the x32 ABI on amd64, all refused.
const x32 = 0x40000000

// seccompFilter is the classic BPF program bwrap installs (--seccomp): on
// this architecture the denied syscalls fail with EPERM and the rest are
// allowed; a syscall of another architecture kills the process.
func seccompFilter() ([]byte, error) {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	type insn struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	const (
		ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		// Offsets in struct seccomp_data.
		nrOffset   = 0
		archOffset = 4
	)
	n := len(deniedSyscalls)
	prog := []insn{
		{code: ldAbs, k: archOffset},
		{code: jeq, jt: 1, k: arch},
		{code: ret, k: unix.SECCOMP_RET_KILL_PROCESS},
		{code: ldAbs, k: nrOffset},
	}
	if runtime.GOARCH == "amd64" {
		prog = append(prog, insn{code: jge, jt: uint8(n + 1), k: x32})
	}
	for i, nr := range deniedSyscalls {
		prog = append(prog, insn{code: jeq, jt: uint8(n - i), k: uint32(nr)})
	}
	prog = append(prog,
		insn{code: ret, k: unix.SECCOMP_RET_ALLOW},
		insn{code: ret, k: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	)
	out := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out, nil
}
