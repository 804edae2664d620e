/* The C API from C (tests/install): links libkiln_runtime.so, opens device 0 and reports its
 * name, or exits 77 with the runtime's reason when there is no GPU. */
#include <stdio.h>

#include "kiln_runtime.h"

int main(void) {
  kiln_runtime* rt = NULL;
  const char* name = NULL;
  int rc = kiln_runtime_open(0, &rt);
  if (rc == KILN_ERROR_NO_DEVICE) {
    printf("[SKIP] %s\n", kiln_last_error());
    return 77;
  }
  if (rc != KILN_OK || kiln_device_name(rt, &name) != KILN_OK) {
    fprintf(stderr, "c_smoke: %s\n", kiln_last_error());
    return 1;
  }
  printf("c_smoke: opened %s\n", name);
  return kiln_runtime_close(rt);
}
