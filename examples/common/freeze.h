/* --freeze SPEC, model-independent: both examples lay their units out as embedding (0), L
 * blocks (1..L) and one last unit (L+1: gpt2's ln_f, Llama's head), and name them the same way. */
#ifndef COMMON_FREEZE_H
#define COMMON_FREEZE_H

/* SPEC into mask (room for L + 2 units, 1 = frozen): comma-separated items, each "embedding",
   "blocks", last_name (the unit L+1's name), a unit index N or a range N-M. NULL spec: nothing
   frozen. 0, or -1 for a bad item (gpt2_error() says which). */
int gpt2_freeze_spec(const char *spec, int layers, const char *last_name, int *mask);

#endif
