/* A C11 program built against an installed kfuse through find_package. */
#include <kfuse.h>
#include <stdio.h>

int main(int argc, char **argv) {
  kfuse_update *update = NULL;
  if (argc < 2 || kfuse_update_create_from_file(argv[1], &update) != KFUSE_OK) {
    printf("error: %s\n", kfuse_last_error());
    return 1;
  }
  printf("arguments: %zu\n", kfuse_update_num_args(update));
  kfuse_update_destroy(update);
  return 0;
}
