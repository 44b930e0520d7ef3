/* SplitMix64-style mixing of a counter: cheap, stateless and well distributed. */
#include "rng.h"

#include <math.h>

/* The SplitMix64 finaliser (Stafford's mix13 constants). */
static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Streams and indices are folded in with distinct odd multipliers so (s, i) pairs do not
   collide for any realistic sizes. */
uint64_t rng_bits(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = mix(seed + 0x9e3779b97f4a7c15ULL);
  z = mix(z ^ (stream * 0xd1b54a32d192ed03ULL));
  return mix(z ^ (index * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL));
}

float rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return (float)(rng_bits(seed, stream, index) >> 40) / 16777216.0f;
}

/* Each normal uses draws 2i and 2i+1 of the stream; u1 is kept away from 0 for the log. */
float rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  double u1 = ((double)(rng_bits(seed, stream, 2 * index) >> 11) + 0.5) / 9007199254740992.0;
  double u2 = (double)(rng_bits(seed, stream, 2 * index + 1) >> 11) / 9007199254740992.0;
  return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2));
}
