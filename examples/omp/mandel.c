/* An OpenMP Mandelbrot set: core-bound, rows handed out dynamically
 * (schedule(dynamic)), so its threads rarely wait for each other: the
 * opposite of jacobi.c beside another job.
 *
 *   mandel [SIZE] [MAX_ITER]   default 1200 x 1200 points, 2000 iterations
 *
 * Threads: OMP_NUM_THREADS. Prints the number of points in the set.
 * cosched's own code. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long size = argc > 1 ? atol(argv[1]) : 1200;
    long max_iter = argc > 2 ? atol(argv[2]) : 2000;
    if (size < 1 || max_iter < 1) {
        fprintf(stderr, "usage: mandel [SIZE >= 1] [MAX_ITER >= 1]\n");
        return 2;
    }
    long inside = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : inside)
    for (long y = 0; y < size; y++) {
        for (long x = 0; x < size; x++) {
            double cr = -2.0 + 2.5 * x / size, ci = -1.25 + 2.5 * y / size, zr = 0.0, zi = 0.0;
            long k = 0;
            while (k < max_iter && zr * zr + zi * zi <= 4.0) {
                double t = zr * zr - zi * zi + cr;
                zi = 2.0 * zr * zi + ci;
                zr = t;
                k++;
            }
            inside += k == max_iter;
        }
    }
    printf("mandel %ld x %ld, %ld iterations: %ld points inside\n", size, size, max_iter, inside);
    return 0;
}
