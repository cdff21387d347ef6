/*
 * pt_fault.h — for cmocka tests of guard pages: asserts that a write to an address
 * kills a process with SIGSEGV. The write happens in a forked child with SIGSEGV's
 * default action (the engine's handler passes faults outside linear memory on, and a
 * fault in the test process itself would end the test), and the parent checks how
 * the child died. Include after <cmocka.h>.
 */
#ifndef PT_FAULT_H
#define PT_FAULT_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void pt_assert_write_faults(volatile char *p) {
    fflush(NULL); /* the child must not flush the parent's buffered output again */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        *p = 1;
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
}

#endif
