/* A loopback TCP port for the rendezvous tests (test_comm_env*.c). */
#ifndef ZS_TESTS_COMM_TEST_FREE_PORT_H
#define ZS_TESTS_COMM_TEST_FREE_PORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A port nothing listens on right now (the kernel's pick for an unbound socket, then closed);
   ends the test (exit 2) when no socket can be had. */
static inline int zs_test_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
      getsockname(fd, (struct sockaddr *)&a, &len)) {
    perror("free_port");
    exit(2);
  }
  close(fd);
  return ntohs(a.sin_port);
}

#endif
