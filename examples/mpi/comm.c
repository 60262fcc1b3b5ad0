/* comm: the communication-only job of the Xeon Phi interference study, in MPI.
 *
 * Ranks exchange messages of each size in turn (1 KiB - 4 MiB by default,
 * doubling) for a fixed number of iterations per size, so the job's work is
 * fixed and its run time is what a co-runner slows:
 *
 *   pingpong   rank 0 sends to rank 1, which sends it back (MPI_Send/Recv);
 *              other ranks pair up the same way (2k with 2k+1)
 *   allreduce  every rank sums a buffer of the size with all others
 *              (MPI_Allreduce), the collective most solvers call per step
 *
 * Usage: comm [pingpong|allreduce] [ITERATIONS] [MIN_KIB] [MAX_KIB]
 *
 * Rank 0 prints one line per size (`size_kib N us_per_iter X MB_s Y`) and a
 * `step K of N` line after each size, which a workload's `progress` key can
 * read; the last line is the whole exchange's time. Built by build.sh with
 * Open MPI's mpicc; run under `mpirun -np 2`.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(const char *why)
{
    fprintf(stderr, "comm: %s\nusage: comm [pingpong|allreduce] [ITERATIONS] [MIN_KIB] [MAX_KIB]\n", why);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static long arg(int argc, char **argv, int i, long dflt, const char *name)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end != '\0' || v <= 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be a positive integer, got `%s`", name, argv[i]);
        usage(msg);
    }
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const char *mode = argc > 1 ? argv[1] : "pingpong";
    int allreduce = strcmp(mode, "allreduce") == 0;
    if (!allreduce && strcmp(mode, "pingpong") != 0)
        usage("the mode must be pingpong or allreduce");
    long iters = arg(argc, argv, 2, 200, "ITERATIONS");
    long min_kib = arg(argc, argv, 3, 1, "MIN_KIB");
    long max_kib = arg(argc, argv, 4, 4096, "MAX_KIB");
    if (min_kib > max_kib)
        usage("MIN_KIB is larger than MAX_KIB");
    if (!allreduce && size % 2 != 0)
        usage("pingpong needs an even number of ranks");

    size_t max_bytes = (size_t)max_kib * 1024;
    char *send = malloc(max_bytes), *recv = malloc(max_bytes);
    if (!send || !recv)
        usage("out of memory for the message buffers");
    memset(send, rank + 1, max_bytes);
    memset(recv, 0, max_bytes);

    int steps = 0;
    for (long kib = min_kib; kib <= max_kib; kib *= 2)
        steps++;

    int peer = rank ^ 1;
    double t_all = MPI_Wtime();
    int step = 0;
    for (long kib = min_kib; kib <= max_kib; kib *= 2) {
        size_t bytes = (size_t)kib * 1024;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            if (allreduce) {
                /* As doubles, so the reduction does arithmetic a solver would. */
                MPI_Allreduce(send, recv, (int)(bytes / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            } else if (rank % 2 == 0) {
                MPI_Send(send, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(recv, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(recv, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(send, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        double dt = MPI_Wtime() - t0;
        step++;
        if (rank == 0) {
            /* A ping-pong moves the message twice per iteration. */
            double moved = (allreduce ? 1.0 : 2.0) * (double)bytes * (double)iters;
            printf("size_kib %ld us_per_iter %.2f MB_s %.1f\n", kib, dt / iters * 1e6, moved / dt / 1e6);
            printf("step %d of %d\n", step, steps);
            fflush(stdout);
        }
    }
    double total = MPI_Wtime() - t_all;
    if (rank == 0)
        printf("%s ranks %d iterations %ld total_s %.4f\n", mode, size, iters, total);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
