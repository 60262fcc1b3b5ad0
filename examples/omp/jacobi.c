/* An OpenMP 5-point Jacobi sweep on an N x N grid: memory-bound, with a
 * barrier after every sweep, the shape of many OpenMP solvers. Its threads
 * spin at each barrier (libgomp's default OMP_WAIT_POLICY), which is what
 * oversubscription punishes and time-shared co-execution avoids (the nOS-V paper).
 *
 *   jacobi [N] [SWEEPS]      default 2048 x 2048 (two 32 MiB grids), 60 sweeps
 *
 * Threads: OMP_NUM_THREADS. Prints the sweeps' checksum, so a run that
 * went wrong is told from one that did the same work. cosched's own code. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2048;
    long sweeps = argc > 2 ? atol(argv[2]) : 60;
    if (n < 3 || sweeps < 1) {
        fprintf(stderr, "usage: jacobi [N >= 3] [SWEEPS >= 1]\n");
        return 2;
    }
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
    if (!a || !b) {
        fprintf(stderr, "jacobi: out of memory for two %ld x %ld grids\n", n, n);
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            a[i * n + j] = b[i * n + j] = (i == 0 || j == 0 || i == n - 1 || j == n - 1) ? 1.0 : 0.0;
    for (long s = 0; s < sweeps; s++) {
#pragma omp parallel for schedule(static)
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                b[i * n + j] = 0.25 * (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] + a[i * n + j + 1]);
        double *t = a;
        a = b;
        b = t;
    }
    double sum = 0.0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (long i = 0; i < n * n; i++)
        sum += a[i];
    printf("jacobi %ld x %ld, %ld sweeps: checksum %.6f\n", n, n, sweeps, sum);
    free(a);
    free(b);
    return 0;
}
