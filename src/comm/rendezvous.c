/* TCP rendezvous for zs_comm_init_env (see rendezvous.h). Every socket operation polls against one
 * deadline, so a missing rank becomes ZS_ERR_TIMEOUT, never a hang. Messages are tiny and
 * length-prefixed; integers travel in network byte order. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm/backoff.h"
#include "base/error.h"
#include "comm/rendezvous.h"

#define RDV_MAGIC 0x7a736864u /* "zshd" */
#define RDV_MAX_PAYLOAD (1u << 20)

struct zs_rdv {
  int rank, size;
  int *fd; /* rank 0: fd[r] is rank r's socket (fd[0] = -1); others: fd[0] is rank 0's */
};

/* Milliseconds left before deadline (at least 0, at most 1 s so loops re-check). */
static int ms_left(double deadline) {
  double left = deadline - zs_clock_now_s();
  if (left <= 0) return 0;
  return left > 1.0 ? 1000 : (int)(left * 1000.0) + 1;
}

/* Sends or receives exactly len bytes before deadline. */
static zs_status xfer(int fd, void *buf, size_t len, int out, double deadline, const char *what) {
  char *p = buf;
  while (len > 0) {
    struct pollfd pf = {fd, (short)(out ? POLLOUT : POLLIN), 0};
    if (zs_clock_now_s() > deadline)
      return zs_err(ZS_ERR_TIMEOUT, "rendezvous: %s timed out: the peer stopped answering", what);
    int pr = poll(&pf, 1, ms_left(deadline));
    if (pr < 0 && errno != EINTR)
      return zs_err(ZS_ERR_COMM, "rendezvous: %s: poll failed: %s", what, strerror(errno));
    if (pr <= 0) continue;
    ssize_t n =
        out ? send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL) : recv(fd, p, len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n <= 0)
      return zs_err(ZS_ERR_COMM,
                    "rendezvous: %s failed: %s: the peer closed the connection or "
                    "died",
                    what, n == 0 ? "connection closed" : strerror(errno));
    p += n;
    len -= (size_t)n;
  }
  return ZS_OK;
}

/* Rank 0: a listening socket on every local address (IPv6 dual stack, else IPv4). */
static zs_status listen_on(int port, int *out) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, zero = 0, err = 0;
  if (fd >= 0) {
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_any;
    a6.sin6_port = htons((uint16_t)port);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, (struct sockaddr *)&a6, sizeof a6) == 0 && listen(fd, 128) == 0) {
      *out = fd;
      return ZS_OK;
    }
    err = errno;
    close(fd);
  }
  fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    struct sockaddr_in a4;
    memset(&a4, 0, sizeof a4);
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    a4.sin_port = htons((uint16_t)port);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a4, sizeof a4) == 0 && listen(fd, 128) == 0) {
      *out = fd;
      return ZS_OK;
    }
    err = errno;
    close(fd);
  }
  return zs_err(ZS_ERR_COMM,
                "rendezvous: rank 0 cannot listen on MASTER_PORT=%d: %s: pick a free "
                "port (or wait until the previous job released it)",
                port, strerror(err));
}

/* Rank 0: accepts size-1 peers, each announcing (magic, rank, size). */
static zs_status accept_all(zs_rdv *r, int lfd, int port, double deadline, double timeout_s) {
  int joined = 0;
  while (joined < r->size - 1) {
    struct pollfd pf = {lfd, POLLIN, 0};
    if (zs_clock_now_s() > deadline) {
      char missing[256] = "";
      size_t off = 0;
      for (int i = 1; i < r->size && off < sizeof missing - 16; i++)
        if (r->fd[i] < 0) off += (size_t)snprintf(missing + off, sizeof missing - off, " %d", i);
      return zs_err(ZS_ERR_TIMEOUT,
                    "rendezvous: only %d of %d ranks reached rank 0 on port %d "
                    "within %.1f s (missing:%s): start every rank with the same "
                    "MASTER_ADDR/MASTER_PORT, or raise ZS_COMM_TIMEOUT_S",
                    joined + 1, r->size, port, timeout_s, missing);
    }
    int pr = poll(&pf, 1, ms_left(deadline));
    if (pr <= 0) continue;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    uint32_t hello[3], ack[2];
    /* A stranger that sends nothing or garbage is dropped, not fatal (port scanners exist). */
    double hd = zs_clock_now_s() + 5.0 < deadline ? zs_clock_now_s() + 5.0 : deadline;
    if (xfer(fd, hello, sizeof hello, 0, hd, "reading a peer's hello") != ZS_OK ||
        ntohl(hello[0]) != RDV_MAGIC) {
      close(fd);
      continue;
    }
    uint32_t pr_rank = ntohl(hello[1]), pr_size = ntohl(hello[2]);
    int bad = pr_size != (uint32_t)r->size
                  ? 2
                  : (pr_rank == 0 || pr_rank >= (uint32_t)r->size || r->fd[pr_rank] >= 0);
    ack[0] = htonl(RDV_MAGIC);
    ack[1] = htonl((uint32_t)bad);
    zs_status rc = xfer(fd, ack, sizeof ack, 1, deadline, "acknowledging a peer");
    if (bad == 2) {
      close(fd);
      return zs_err(ZS_ERR_INVALID_ARG,
                    "rendezvous: rank %u says WORLD_SIZE=%u but rank 0 has %d: "
                    "give every rank the same WORLD_SIZE",
                    pr_rank, pr_size, r->size);
    }
    if (bad) {
      close(fd);
      return zs_err(ZS_ERR_INVALID_ARG,
                    "rendezvous: two processes claim RANK=%u (or it is out of "
                    "1..%d): give every process its own RANK",
                    pr_rank, r->size - 1);
    }
    if (rc != ZS_OK) {
      close(fd);
      return rc;
    }
    r->fd[pr_rank] = fd;
    joined++;
  }
  return ZS_OK;
}

/* Non-blocking connect to one address, bounded by deadline; returns the fd or -1 (errno set). */
static int try_connect(const struct addrinfo *ai, double deadline) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) return -1;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) goto fail;
  struct pollfd pf = {fd, POLLOUT, 0};
  if (poll(&pf, 1, ms_left(deadline)) <= 0) {
    errno = ETIMEDOUT;
    goto fail;
  }
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) goto fail;
  if (err == 0) return fd;
  errno = err;
fail:;
  int saved = errno;
  close(fd);
  errno = saved;
  return -1;
}

/* Other ranks: connect (retrying while rank 0 is not up yet), say hello, read the ack. */
static zs_status connect_root(zs_rdv *r, const char *addr, int port, double deadline,
                              double timeout_s) {
  char ports[16];
  snprintf(ports, sizeof ports, "%d", port);
  int last = ECONNREFUSED;
  while (r->fd[0] < 0) {
    if (zs_clock_now_s() > deadline)
      return zs_err(ZS_ERR_TIMEOUT,
                    "rendezvous: rank %d could not reach rank 0 at %s:%d within "
                    "%.1f s (last error: %s): check that rank 0 runs, MASTER_ADDR "
                    "and MASTER_PORT are right and the port is reachable",
                    r->rank, addr, port, timeout_s, strerror(last));
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(addr, ports, &hints, &res);
    if (g != 0)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "rendezvous: MASTER_ADDR=\"%s\" does not resolve (%s): set "
                    "it to rank 0's host",
                    addr, gai_strerror(g));
    for (struct addrinfo *ai = res; ai && r->fd[0] < 0; ai = ai->ai_next) {
      r->fd[0] = try_connect(ai, deadline);
      if (r->fd[0] < 0) last = errno;
    }
    freeaddrinfo(res);
    if (r->fd[0] < 0) {
      struct timespec ts = {0, 100000000L};
      nanosleep(&ts, NULL);
    }
  }
  uint32_t hello[3] = {htonl(RDV_MAGIC), htonl((uint32_t)r->rank), htonl((uint32_t)r->size)};
  uint32_t ack[2];
  ZS_CHECK(xfer(r->fd[0], hello, sizeof hello, 1, deadline, "sending hello to rank 0"));
  ZS_CHECK(xfer(r->fd[0], ack, sizeof ack, 0, deadline, "reading rank 0's answer"));
  if (ntohl(ack[0]) != RDV_MAGIC)
    return zs_err(ZS_ERR_COMM,
                  "rendezvous: %s:%d answered but is not a zshard rank 0: check "
                  "MASTER_PORT",
                  addr, port);
  if (ntohl(ack[1]) != 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "rendezvous: rank 0 refused rank %d of %d (%s): give every "
                  "process its own RANK and the same WORLD_SIZE",
                  r->rank, r->size,
                  ntohl(ack[1]) == 2 ? "WORLD_SIZE differs" : "rank taken or invalid");
  return ZS_OK;
}

/* See rendezvous.h. */
zs_status zs_rdv_open(const char *addr, int port, int rank, int size, double timeout_s,
                      zs_rdv **out) {
  zs_status rc = ZS_OK;
  int lfd = -1;
  if (!out || size < 2 || rank < 0 || rank >= size || port < 1 || port > 65535 || (rank && !addr))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_rdv_open: bad arguments (rank %d, size %d, port %d)",
                  rank, size, port);
  *out = NULL;
  if (timeout_s <= 0) timeout_s = 1e9;
  double deadline = zs_clock_now_s() + timeout_s;
  zs_rdv *r = calloc(1, sizeof *r);
  int *fds = calloc((size_t)(rank == 0 ? size : 1), sizeof *fds);
  if (!r || !fds) {
    free(r);
    free(fds);
    return zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory for the rendezvous");
  }
  r->rank = rank;
  r->size = size;
  r->fd = fds;
  for (int i = 0; i < (rank == 0 ? size : 1); i++)
    r->fd[i] = -1;
  if (rank == 0) {
    ZS_CHECK_GOTO(listen_on(port, &lfd), rc, fail);
    ZS_CHECK_GOTO(accept_all(r, lfd, port, deadline, timeout_s), rc, fail);
    close(lfd);
  } else {
    ZS_CHECK_GOTO(connect_root(r, addr, port, deadline, timeout_s), rc, fail);
  }
  *out = r;
  return ZS_OK;
fail:
  if (lfd >= 0) close(lfd);
  zs_rdv_close(r);
  return rc;
}

/* Rank 0 sends (magic, tag, len, bytes) to each rank; the others check magic, tag and len, so two
   ranks in different calls (an id broadcast against a host reduction) fail instead of mixing. */
zs_status zs_rdv_bcast_tag(zs_rdv *r, void *buf, size_t len, uint32_t tag, double timeout_s) {
  if (!r || (!buf && len) || len > RDV_MAX_PAYLOAD)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_rdv_bcast: bad arguments (len %zu)", len);
  double deadline = zs_clock_now_s() + (timeout_s > 0 ? timeout_s : 1e9);
  uint32_t hdr[3] = {htonl(RDV_MAGIC), htonl(tag), htonl((uint32_t)len)};
  if (r->rank == 0) {
    for (int i = 1; i < r->size; i++) {
      ZS_CHECK(xfer(r->fd[i], hdr, sizeof hdr, 1, deadline, "sending a message header"));
      ZS_CHECK(xfer(r->fd[i], buf, len, 1, deadline, "sending a message"));
    }
    return ZS_OK;
  }
  ZS_CHECK(xfer(r->fd[0], hdr, sizeof hdr, 0, deadline, "receiving a message header from rank 0"));
  if (ntohl(hdr[0]) != RDV_MAGIC || ntohl(hdr[1]) != tag || ntohl(hdr[2]) != (uint32_t)len)
    return zs_err(ZS_ERR_COMM,
                  "rendezvous: rank 0 sent message %u of %u bytes where message %u of %zu bytes "
                  "was expected: every rank must run the same zshard build and make the same "
                  "collective calls in the same order",
                  ntohl(hdr[1]), ntohl(hdr[2]), tag, len);
  return xfer(r->fd[0], buf, len, 0, deadline, "receiving a message from rank 0");
}

/* The NCCL unique id travels as tag 1. */
zs_status zs_rdv_bcast(zs_rdv *r, void *buf, size_t len, double timeout_s) {
  return zs_rdv_bcast_tag(r, buf, len, 1u, timeout_s);
}

/* Every rank sends (magic, tag, len, bytes) to rank 0, which reads them in rank order. */
zs_status zs_rdv_gather(zs_rdv *r, const void *send, void *all, size_t len, uint32_t tag,
                        double timeout_s) {
  if (!r || (!send && len) || (r->rank == 0 && !all && len) || len > RDV_MAX_PAYLOAD)
    return zs_err(ZS_ERR_INVALID_ARG, "zs_rdv_gather: bad arguments (len %zu)", len);
  double deadline = zs_clock_now_s() + (timeout_s > 0 ? timeout_s : 1e9);
  uint32_t hdr[3] = {htonl(RDV_MAGIC), htonl(tag), htonl((uint32_t)len)};
  if (r->rank != 0) {
    ZS_CHECK(xfer(r->fd[0], hdr, sizeof hdr, 1, deadline, "sending a message header to rank 0"));
    return xfer(r->fd[0], (void *)send, len, 1, deadline, "sending a message to rank 0");
  }
  if (len) memmove(all, send, len);
  for (int i = 1; i < r->size; i++) {
    char what[64];
    snprintf(what, sizeof what, "waiting for rank %d", i);
    ZS_CHECK(xfer(r->fd[i], hdr, sizeof hdr, 0, deadline, what));
    if (ntohl(hdr[0]) != RDV_MAGIC || ntohl(hdr[1]) != tag || ntohl(hdr[2]) != (uint32_t)len)
      return zs_err(ZS_ERR_COMM,
                    "rendezvous: rank %d sent message %u of %u bytes where message %u of %zu "
                    "bytes was expected: every rank must make the same collective calls in the "
                    "same order, with the same count",
                    i, ntohl(hdr[1]), ntohl(hdr[2]), tag, len);
    ZS_CHECK(xfer(r->fd[i], (char *)all + (size_t)i * len, len, 0, deadline, what));
  }
  return ZS_OK;
}

/* Closes all sockets. */
void zs_rdv_close(zs_rdv *r) {
  if (!r) return;
  for (int i = 0; i < (r->rank == 0 ? r->size : 1); i++)
    if (r->fd[i] >= 0) close(r->fd[i]);
  free(r->fd);
  free(r);
}

/* open + bcast + close. */
zs_status zs_rendezvous_exchange(const char *addr, int port, int rank, int size, void *buf,
                                 size_t len, double timeout_s) {
  zs_rdv *r = NULL;
  double t0 = zs_clock_now_s();
  ZS_CHECK(zs_rdv_open(addr, port, rank, size, timeout_s, &r));
  double left = timeout_s > 0 ? timeout_s - (zs_clock_now_s() - t0) : 0;
  zs_status rc = zs_rdv_bcast(r, buf, len, timeout_s > 0 && left <= 0 ? 0.001 : left);
  zs_rdv_close(r);
  return rc;
}
