/* test_gpu.c - the CUDA backend: its cell arithmetic equals the CPU
 * reference semantics, and without a device it fails with a clear status. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "gpu.h"
#include "ops.h"
#include "tensor.h"

static const ops_op ewise_ops[] = {OP_EWADD, OP_EWMUL, OP_SMUL, OP_RELU};

/* Evaluate op on the CPU reference and with gpu_cell; they must agree. */
static void check_cell_matches_cpu(ops_op op, uint64_t seed) {
    ten_shape s = {2, {3, 5}}, scalar = {0, {0}};
    ten a, b, out;
    assert_int_equal(ten_alloc(&a, &s), 0);
    assert_int_equal(ten_alloc(&b, op == OP_SMUL ? &scalar : &s), 0);
    assert_int_equal(ten_alloc(&out, &s), 0);
    ten_fill_random(&a, &seed);
    ten_fill_random(&b, &seed);
    const ten *in[2] = {&a, &b};
    int32_t param[OPS_MAX_PARAMS] = {0};
    assert_int_equal(ops_eval(op, param, in, &out), OPS_OK);
    for (int64_t i = 0; i < ten_numel(&s); i++) {
        uint64_t bv = b.data[op == OP_SMUL ? 0 : i];
        assert_true(gpu_cell(op, a.data[i], bv) == out.data[i]);
    }
    ten_free(&a), ten_free(&b), ten_free(&out);
}

static void test_cell_matches_cpu(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof ewise_ops / sizeof ewise_ops[0]; k++)
        for (uint64_t seed = 1; seed <= 20; seed++) check_cell_matches_cpu(ewise_ops[k], seed);
}

/* With no device, the backend says so instead of computing garbage; with
 * one, it must agree with the CPU. */
static void test_device_or_clear_error(void **state) {
    (void)state;
    char err[GPU_ERRLEN] = "";
    int n = -1;
    gpu_status rc = gpu_device_count(&n, err);
    uint64_t a[4] = {1, 2, 3, MP_P - 1}, b[4] = {5, 6, 7, 8}, out[4] = {0};
    gpu_status erc = gpu_ewise(OP_EWADD, a, b, out, 4, err);
    if (rc == GPU_OK) {
        assert_true(n >= 1);
        assert_int_equal(erc, GPU_OK);
        for (int i = 0; i < 4; i++) assert_true(out[i] == gpu_cell(OP_EWADD, a[i], b[i]));
        return;
    }
    assert_int_equal(n, 0);
    assert_int_equal(rc, gpu_built() ? GPU_ENODEV : GPU_ENOTBUILT);
    assert_int_equal(erc, rc);
    assert_true(strlen(err) > 0);
}

/* With a device: every element-wise operator on sizes that make the
 * backend's kept buffers grow and be reused (small, large, small again)
 * gives gpu_cell's cells; smul reads one scalar, relu no second input. */
static void test_device_sizes(void **state) {
    (void)state;
    char err[GPU_ERRLEN] = "";
    int n = 0;
    if (gpu_device_count(&n, err) != GPU_OK) {
        assert_int_equal(n, 0);
        return; /* nothing to run: test_device_or_clear_error checks the refusal */
    }
    static const int64_t sizes[] = {1, 3000, 70001, 5, 70001};
    uint64_t seed = 7;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t cells = sizes[s];
        ten_shape shape = {1, {(int32_t)cells}};
        ten a, b, out;
        assert_int_equal(ten_alloc(&a, &shape), 0);
        assert_int_equal(ten_alloc(&b, &shape), 0);
        assert_int_equal(ten_alloc(&out, &shape), 0);
        ten_fill_random(&a, &seed);
        ten_fill_random(&b, &seed);
        for (size_t k = 0; k < sizeof ewise_ops / sizeof ewise_ops[0]; k++) {
            ops_op op = ewise_ops[k];
            const uint64_t *second = op == OP_RELU ? NULL : b.data;
            assert_int_equal(gpu_ewise(op, a.data, second, out.data, cells, err), GPU_OK);
            for (int64_t i = 0; i < cells; i++) {
                uint64_t bv = op == OP_RELU ? 0 : b.data[op == OP_SMUL ? 0 : i];
                assert_true(out.data[i] == gpu_cell(op, a.data[i], bv));
            }
        }
        ten_free(&a), ten_free(&b), ten_free(&out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cell_matches_cpu),
        cmocka_unit_test(test_device_or_clear_error),
        cmocka_unit_test(test_device_sizes),
    };
    return cmocka_run_group_tests_name("gpu", tests, NULL, NULL);
}
