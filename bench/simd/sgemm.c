/* sgemm.c — f32 matrix multiply (i-k-j order, the inner loop an f32x4 axpy) and a
 * dot product; prints a checksum. SIMD benchmark (bench/simd_bench.sh). */
#include <stdio.h>
#include <stdlib.h>

#define N 160

static float A[N][N], B[N][N], C[N][N];

static void mm(void) {
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j++)
            C[i][j] = 0.0f;
        for (int k = 0; k < N; k++) {
            float a = A[i][k];
            for (int j = 0; j < N; j++)
                C[i][j] += a * B[k][j];
        }
    }
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 60;
    unsigned r = 7;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            r = r * 1103515245u + 12345u;
            A[i][j] = (float)((r >> 16) & 255) / 64.0f - 2.0f;
            r = r * 1103515245u + 12345u;
            B[i][j] = (float)((r >> 16) & 255) / 64.0f - 2.0f;
        }
    double sum = 0;
    for (int t = 0; t < reps; t++) {
        mm();
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                A[i][j] = C[i][j] * (1.0f / 256.0f);
        sum += C[t % N][(t * 7) % N];
    }
    printf("sgemm %d %.3f\n", reps, sum);
    return 0;
}
