/* bad_input_test's second table: every TC_* variable the library reads
 * (grep tc_config_ and getenv in base, runtime, transport, algo, topo),
 * malformed. Included once, by bad_input_test.c. Not checked here, with why:
 * TC_JOB_SECRET and TC_LAUNCHER (free text), TC_CUDA_PLUGIN (a path,
 * read only with a CUDA device), TC_LOG_FILE (any path; too long is checked). */
#ifndef TC_TESTS_BAD_INPUT_ENV_H
#define TC_TESTS_BAD_INPUT_ENV_H

#define X16 "/xxxxxxxxxxxxxxx"
#define X256 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16
#define X4K X256 X256 X256 X256 X256 X256 X256 X256 X256 X256 X256 X256 X256 X256 X256 X256

/* Every TC_* variable the library reads, malformed. @p later: read by the
 * first operation, not by tc_comm_create. */
typedef struct {
    const char *var, *value;
    int later;
    const char *needle;
} env_row_t;

static const env_row_t env_rows[] = {
    {"TC_TIMEOUT_S", "soon", 0, "TC_TIMEOUT_S=\"soon\": not an integer"},
    {"TC_TIMEOUT_S", "0", 0, "TC_TIMEOUT_S=\"0\": out of range"},
    {"TC_TIMEOUT_S", " 5", 0, "TC_TIMEOUT_S=\" 5\""},
    {"TC_BOOTSTRAP", "carrier-pigeon", 0, "TC_BOOTSTRAP=\"carrier-pigeon\": unknown value"},
    {"TC_CHECK", "garbage", 0, "TC_CHECK=\"garbage\": not a boolean"},
    {"TC_FR_SIZE", "garbage", 0, "TC_FR_SIZE=\"garbage\""},
    {"TC_FR_SIZE", "-1", 0, "TC_FR_SIZE=\"-1\": out of range"},
    {"TC_WIN_POOL", "plenty", 0, "TC_WIN_POOL=\"plenty\""},
    {"TC_WIN_POOL", "-1", 0, "TC_WIN_POOL=\"-1\": out of range"},
    {"TC_HEARTBEAT_MS", "often", 0, "TC_HEARTBEAT_MS=\"often\""},
    {"TC_HEARTBEAT_MS", "-1", 0, "TC_HEARTBEAT_MS=\"-1\": out of range"},
    {"TC_HEARTBEAT_MISSES", "1", 0, "TC_HEARTBEAT_MISSES=\"1\": out of range"},
    {"TC_SPIN_US", "x", 0, "TC_SPIN_US=\"x\""},
    {"TC_COPY", "bogus", 0, "TC_COPY=\"bogus\": unknown value"}, /* accepted before */
    {"TC_SHM", "maybe", 0, "TC_SHM=\"maybe\": unknown value"},
    {"TC_SHM_CELLS", "1", 0, "TC_SHM_CELLS"},
    {"TC_SHM_CELLS", "many", 0, "TC_SHM_CELLS"},
    {"TC_SHM_CELL_SIZE", "big", 0, "TC_SHM_CELL_SIZE"},
    {"TC_SHM_CELL_SIZE", "1000", 0, "TC_SHM_CELL_SIZE"},
    {"TC_SHM_CMA", "perhaps", 0, "TC_SHM_CMA=\"perhaps\""},
    {"TC_SHM_LIVENESS_MS", "0", 0, "TC_SHM_LIVENESS_MS"},
    {"TC_SOCKET_NSOCKS", "0", 0, "TC_SOCKET_NSOCKS=\"0\": out of range"},
    {"TC_SOCKET_NSOCKS", "two", 0, "TC_SOCKET_NSOCKS=\"two\""},
    {"TC_SOCKET_STRIPE_MIN", "lots", 0, "TC_SOCKET_STRIPE_MIN"},
    {"TC_SOCKET_IFNAME", "no-such-if9", 0, "TC_SOCKET_IFNAME"},
    {"TC_IB", "sometimes", 0, "TC_IB=\"sometimes\": unknown value"},
    {"TC_IB_PORT", "abc", 0, "TC_IB_PORT=\"abc\""},
    {"TC_IB_DEVICE", "", 0, "TC_IB_DEVICE=\"\""},
    {"TC_IB_KEEPALIVE_MS", "-1", 0, "TC_IB_KEEPALIVE_MS"},
    {"TC_IB_REG_CACHE", "maybe", 0, "TC_IB_REG_CACHE=\"maybe\""},
    {"TC_IB_REG_CACHE_MAX", "-1", 0, "TC_IB_REG_CACHE_MAX"},
    {"TC_FAULT_INJECT", "bogus", 0, "TC_FAULT_INJECT"},
    {"TC_FAULT_INJECT", "step:rank=x", 0, "TC_FAULT_INJECT"},
    {"TC_TOPO_SYNTHETIC", "garbage(", 0, "TC_TOPO_SYNTHETIC"},
    {"TC_TOPO_XML", "/nonexistent/topo.xml", 0, "TC_TOPO_XML"},
    {"TC_LOG", "loud", 0, "TC_LOG=\"loud\""},
    {"TC_LOG", "runtime=chatty", 0, "TC_LOG=\"runtime=chatty\""},
    {"TC_LOG_FILE", X4K X4K, 0, "TC_LOG_FILE=\"/xxx"},
    {"TC_ALGO_ALPHA_INTRA_US", "x", 0, "TC_ALGO_ALPHA_INTRA_US=\"x\""},
    {"TC_ALGO_ALPHA_INTER_US", "-1", 0, "TC_ALGO_ALPHA_INTER_US=\"-1\": out of range"},
    {"TC_ALGO_BETA_INTRA_US", "nan", 0, "TC_ALGO_BETA_INTRA_US"},
    {"TC_ALGO_BETA_INTER_US", "x", 0, "TC_ALGO_BETA_INTER_US"},
    {"TC_ALGO_GAMMA_US", "x", 0, "TC_ALGO_GAMMA_US"},
    {"TC_ALGO_OVERHEAD_US", "-0.5", 0, "TC_ALGO_OVERHEAD_US=\"-0.5\": out of range"},
    {"TC_ALGO_RULES", "maybe", 0, "TC_ALGO_RULES=\"maybe\": not a boolean"},
    /* the tuning file: missing, not a file (its contents: tests/algo/tuning_test.c) */
    {"TC_TUNING_FILE", "/nonexistent/x.tune", 0,
     "TC_TUNING_FILE=/nonexistent/x.tune: cannot open: No such file"},
    {"TC_TUNING_FILE", "/", 0, "TC_TUNING_FILE: tuning file /: not a regular file"},
    {"TC_TUNING_FILE", X4K, 0, "TC_TUNING_FILE=" X16},
    {"TC_ALGO_ALL_REDUCE", "nope", 0, "TC_ALGO_ALL_REDUCE=\"nope\": unknown algorithm"},
    /* a misspelt or lower-case name was ignored: the default algorithm ran */
    {"TC_ALGO_ALLREDUCE", "ring", 0,
     "TC_ALGO_ALLREDUCE is set, but tcomms reads no variable of that name: an algorithm is "
     "chosen by TC_ALGO_<COLLECTIVE> with one of ALL_REDUCE, "},
    {"TC_ALGO_all_reduce", "ring", 0, "TC_ALGO_all_reduce is set, but tcomms reads no variable"},
    {"TC_ALGO_ALPHA_INTRA", "1", 0, "TC_ALGO_ALPHA_INTRA is set, but tcomms reads no variable"},
    {"TC_ALGO_REDUCE", "nope", 0, "TC_ALGO_REDUCE=\"nope\""},
    {"TC_ALGO_BROADCAST", "nope", 0, "TC_ALGO_BROADCAST=\"nope\""},
    {"TC_ALGO_ALL_GATHER", "nope", 0, "TC_ALGO_ALL_GATHER=\"nope\""},
    {"TC_ALGO_REDUCE_SCATTER", "nope", 0, "TC_ALGO_REDUCE_SCATTER=\"nope\""},
    {"TC_ALGO_ALL_TO_ALL", "nope", 0, "TC_ALGO_ALL_TO_ALL=\"nope\""},
    {"TC_ALGO_GATHER", "nope", 0, "TC_ALGO_GATHER=\"nope\""},
    {"TC_ALGO_SCATTER", "nope", 0, "TC_ALGO_SCATTER=\"nope\""},
    {"TC_ALGO_BARRIER", "nope", 0, "TC_ALGO_BARRIER=\"nope\""},
    /* the torchrun environment's (TC_BOOTSTRAP=env, a world of one) */
    {"TC_STORE_PORT", "http", 0, "TC_STORE_PORT=\"http\""},
    {"TC_STORE_PORT", "70000", 0, "TC_STORE_PORT=\"70000\": out of range"},
    {"TC_BOOT_LINGER_S", "x", 0, "TC_BOOT_LINGER_S=\"x\""},
    /* read at the first collective and at a shrink, the flight recorder's directory at a dump:
     * each was accepted by tc_comm_create, the mistake found only there (in a shrink: when
     * recovering from a failure; the dump: lost) */
    {"TC_SMALL_MAX", "huge", 0, "TC_SMALL_MAX=\"huge\": not an integer"},
    {"TC_SMALL_MAX", "8193", 0, "TC_SMALL_MAX=\"8193\": out of range"},
    {"TC_SHRINK_DENSE_MAX", "-1", 0, "TC_SHRINK_DENSE_MAX=\"-1\": out of range"},
    {"TC_FR_DIR", "/nonexistent/fr", 0,
     "TC_FR_DIR=\"/nonexistent/fr\": No such file or directory: the flight recorder's dumps "
     "would be lost"},
    {"TC_FR_DIR", "/dev/null", 0, "TC_FR_DIR=\"/dev/null\": not a directory"},
};

static void env_clean(void)
{
    static const char *const vars[] = {"PMIX_NAMESPACE",   "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
                                       "PMIX_SERVER_URI3", "PMIX_SERVER_URI2",  "PMIX_SERVER_URI21",
                                       "TC_BOOTSTRAP",     "TC_TIMEOUT_S",      "TC_FR_DIR",
                                       "MASTER_ADDR",      "MASTER_PORT",       "RANK",
                                       "WORLD_SIZE",       "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

#endif
