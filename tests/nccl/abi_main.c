/* Compares braid's nccl.h with the CUDA toolkit's, fact by fact (see abi_side.c). */
#include <stdio.h>

int braid_facts(long* out);
int system_facts(long* out);

int main(void) {
  long a[256], b[256];
  int na = braid_facts(a), nb = system_facts(b), bad = 0;
  if (na != nb) {
    printf("different numbers of facts: %d and %d\n", na, nb);
    return 1;
  }
  for (int i = 0; i < na; ++i) {
    if (a[i] != b[i]) {
      printf("fact %d differs: braid %ld, system %ld\n", i, a[i], b[i]);
      ++bad;
    }
  }
  printf("%d of %d ABI facts match\n", na - bad, na);
  return bad == 0 ? 0 : 1;
}
