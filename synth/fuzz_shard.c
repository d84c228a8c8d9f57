/* fuzz_shard.c - libFuzzer target for the shard file reader (shardfile.h):
 * any byte string gives an error with a message, or classes whose every
 * graph passed the reader's checks and whose member indices lie inside the
 * part. Nothing touches the disk. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shardfile.h"
#include "synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static pool pl;
    static dom d;
    static int ready;
    if (!ready) { /* the default run's inputs, once */
        syn_options o;
        syn_options_init(&o);
        if (syn_inputs(&o, &pl, &d)) abort();
        ready = 1;
    }
    sf_header h;
    sf_part part;
    char err[SF_ERRLEN];
    memset(&part, 0, sizeof part);
    err[0] = 0;
    if (sf_read_mem(data, size, &h, &d, &pl, &part, err, sizeof err) != 0) {
        if (!err[0]) abort(); /* an error must come with a message */
    } else {
        for (size_t i = 0; i < part.n_cls; i++)
            if (part.cls[i].first + part.cls[i].n_members > part.n_mem) abort();
    }
    sf_part_free(&part);
    return 0;
}
