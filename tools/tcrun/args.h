/* Command line of tcrun: parsed and checked before anything is started. */
#ifndef TCRUN_ARGS_H
#define TCRUN_ARGS_H

#define TC_RUN_MAX_RANKS 1024
#define TC_RUN_DEFAULT_GRACE_S 5.0

typedef struct tc_run_args {
    int nranks;
    double timeout_s; /* 0: no job timeout */
    double grace_s;   /* SIGTERM -> SIGKILL delay */
    int verbose;
    int keep_going; /* a failed rank does not stop the others */
    int bind_core;  /* --bind core: rank r runs on the r-th CPU (modulo) of tcrun's own set */
    char *exe_path; /* resolved program path (malloc'd) */
    char **argv;    /* program argv, points into the caller's argv */
} tc_run_args_t;

/* Parses argv. Returns 0 on success; on bad usage prints a message on stderr and returns 2;
 * returns 1 (after printing the help text on stdout) for --help. */
int tc_run_args_parse(int argc, char **argv, tc_run_args_t *out);

void tc_run_args_free(tc_run_args_t *args);

#endif
