/* fuzz_axparse.c - libFuzzer target for the axiom parser: any bytes must
 * parse or fail with a message, never crash; what parses is printed and
 * checked on one instance, which exercises the shape search on hostile
 * axioms too. */
#include <stddef.h>
#include <stdint.h>

#include "axcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ax_set s;
    char err[AX_ERRLEN], buf[256];
    if (ax_parse_string((const char *)data, size, "fuzz", &s, err) != AX_OK) return 0;
    for (int i = 0; i < s.n_axioms && i < 3; i++) {
        axc_result r;
        ax_term_str(&s, &s.axiom[i], s.axiom[i].lhs, buf, sizeof buf);
        axc_check(&s, i, 1, 1, &r);
    }
    ax_free(&s);
    return 0;
}
