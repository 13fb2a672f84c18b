#define _GNU_SOURCE // ppoll
// link_delay: a link's latency in user space, for kernels without tc netem
// (sch_netem). Every packet that an iptables NFQUEUE rule sends to queue
// QUEUE is held for DELAY, then accepted: first in, first out, the same delay
// for every packet, so the order on the link never changes. Only the
// packets' metadata is copied to user space (NFQNL_COPY_META; large GSO
// packets stay whole), and each release is one batch verdict that accepts
// every packet up to the newest one due (netfilter's packet ids count up per
// queue), so a notification the socket dropped cannot strand a packet. It
// runs at real-time priority (SCHED_FIFO 1) so that it wakes up on time.
//
//   link_delay QUEUE DELAY
//
// QUEUE: the queue number (0-65535); DELAY: a time with its unit (200us,
// 0.2ms, 20ms, 1s). The queue is its network namespace's (the cluster
// starts it in its switch namespace). Prints "link_delay: queue Q bound"
// once the queue is bound. On SIGTERM or SIGINT it accepts
// every packet it holds, prints what it did and exits 0.
// scripts/cluster/netns_cluster.sh starts and stops it (link DIR HOST delay).
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// the kernel holds at most this many packets for the queue (more are
// dropped, as a full netem queue would); the ring holds their release times
#define QUEUE_MAXLEN 16384u
#define RECV_BUFFER (8u << 20)

typedef struct {
    uint32_t id;
    int64_t due_ns;
} Held;

typedef struct {
    struct nfq_q_handle *qh;
    int64_t delay_ns;
    Held ring[QUEUE_MAXLEN];
    uint32_t head, count;
    uint32_t newest_id;     // the newest packet id seen (released on exit)
    int have_id;
    uint64_t packets, releases, full, timed, bad_messages;
    int64_t late_max_ns, late_sum_ns;
} Delay;

static volatile sig_atomic_t stop_signal = 0;
static void on_stop(int sig) { stop_signal = sig; }

static int64_t now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("link_delay: clock_gettime");
        exit(1);
    }
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// "200us", "0.2ms", "20ms", "1s" -> ns; -1 if it is not such a time
static int64_t parse_delay(const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !(v >= 0)) return -1;
    double scale;
    if (strcmp(end, "us") == 0) scale = 1e3;
    else if (strcmp(end, "ms") == 0) scale = 1e6;
    else if (strcmp(end, "s") == 0) scale = 1e9;
    else return -1;
    double ns = v * scale;
    if (ns > 10e9) return -1; // over 10 s is no link delay
    return (int64_t)(ns + 0.5);
}

// accept every held packet up to and including id (one batch verdict)
static void release_through(Delay *d, uint32_t id) {
    if (nfq_set_verdict_batch(d->qh, id, NF_ACCEPT) < 0) {
        fprintf(stderr, "link_delay: the verdict for packets up to id %u failed: %s\n", id, strerror(errno));
        exit(1);
    }
    d->releases++;
}

// release every packet that is due; returns ns until the next is due (-1: none held)
static int64_t release_due(Delay *d) {
    int64_t t = now_ns();
    uint32_t last = 0;
    int any = 0;
    while (d->count > 0 && d->ring[d->head].due_ns <= t) {
        Held *h = &d->ring[d->head];
        int64_t late = t - h->due_ns;
        if (late > d->late_max_ns) d->late_max_ns = late;
        d->late_sum_ns += late;
        d->timed++;
        last = h->id;
        any = 1;
        d->head = (d->head + 1) % QUEUE_MAXLEN;
        d->count--;
    }
    if (any) release_through(d, last);
    return d->count > 0 ? d->ring[d->head].due_ns - t : -1;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *arg) {
    (void)qh;
    (void)msg;
    Delay *d = arg;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    if (ph == NULL) {
        fprintf(stderr, "link_delay: a queued packet without its header (no packet id)\n");
        return -1;
    }
    uint32_t id = ntohl(ph->packet_id);
    d->newest_id = id;
    d->have_id = 1;
    d->packets++;
    if (d->count == QUEUE_MAXLEN) {
        // cannot happen while the kernel keeps to QUEUE_MAXLEN; if it does,
        // let everything through rather than hold a packet without a time
        d->full++;
        release_through(d, id);
        d->count = 0;
        return 0;
    }
    Held *h = &d->ring[(d->head + d->count) % QUEUE_MAXLEN];
    h->id = id;
    h->due_ns = now_ns() + d->delay_ns;
    d->count++;
    return 0;
}

static void usage(FILE *to) {
    fprintf(to, "usage: link_delay QUEUE DELAY\n"
                "  holds each packet of netfilter queue QUEUE (0-65535) for DELAY, then accepts it, in order\n"
                "  DELAY: a time with its unit, at most 10 s: 200us, 0.2ms, 20ms, 1s\n"
                "  run by scripts/cluster/netns_cluster.sh link DIR HOST delay TIME\n");
}

int main(int argc, char **argv) {
    int a = 1;
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    for (int i = a; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] != '\0' && !isdigit((unsigned char)argv[i][1])) {
            fprintf(stderr, "link_delay: unknown flag '%s' (see link_delay -h)\n", argv[i]);
            return 1;
        }
    if (argc - a != 2) {
        usage(stderr);
        return 1;
    }
    char *end;
    errno = 0;
    long queue = strtol(argv[a], &end, 10);
    if (errno != 0 || *end != '\0' || end == argv[a] || queue < 0 || queue > 65535) {
        fprintf(stderr, "link_delay: QUEUE must be a number from 0 to 65535, not '%s'\n", argv[a]);
        return 1;
    }
    int64_t delay_ns = parse_delay(argv[a + 1]);
    if (delay_ns < 0) {
        fprintf(stderr, "link_delay: DELAY must be a time of at most 10 s with its unit (us, ms, s), not '%s'\n",
                argv[a + 1]);
        return 1;
    }

    static Delay d; // the ring is 128 KB: not on the stack
    d.delay_ns = delay_ns;
    // timers fire when asked, not up to 50 us later (the default slack)
    if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) != 0) perror("link_delay: PR_SET_TIMERSLACK (ignored)");
    // real-time priority: on a loaded machine a normal process wakes up
    // hundreds of us late (measured on 2 busy cores: 0.3-0.5 ms on average
    // under a bulk transfer, against 50-85 us with it). It sleeps between
    // packets, and the kernel's real-time throttling bounds it regardless.
    struct sched_param sp = {.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
        fprintf(stderr, "link_delay: no real-time priority (%s): packets will be released later under load\n",
                strerror(errno));

    struct nfq_handle *h = nfq_open();
    if (h == NULL) {
        fprintf(stderr, "link_delay: nfq_open failed: %s (root? the kernel's nfnetlink_queue?)\n", strerror(errno));
        return 1;
    }
    d.qh = nfq_create_queue(h, (uint16_t)queue, on_packet, &d);
    if (d.qh == NULL) {
        fprintf(stderr, "link_delay: cannot bind queue %ld: %s (another process holds it?)\n", queue,
                strerror(errno));
        return 1;
    }
    if (nfq_set_mode(d.qh, NFQNL_COPY_META, 0) < 0) {
        fprintf(stderr, "link_delay: cannot set the copy mode to metadata only: %s\n", strerror(errno));
        return 1;
    }
    if (nfq_set_queue_maxlen(d.qh, QUEUE_MAXLEN) < 0) {
        fprintf(stderr, "link_delay: cannot set the queue length to %u: %s\n", QUEUE_MAXLEN, strerror(errno));
        return 1;
    }
    // GSO packets queued whole (not cut into MTU-sized ones first: we never
    // read the payload, so its checksum state does not matter)
    if (nfq_set_queue_flags(d.qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO) < 0) {
        fprintf(stderr, "link_delay: cannot set NFQA_CFG_F_GSO: %s\n", strerror(errno));
        return 1;
    }
    int fd = nfq_fd(h);
    if (nfnl_rcvbufsiz(nfq_nfnlh(h), RECV_BUFFER) < RECV_BUFFER)
        fprintf(stderr, "link_delay: the queue socket's buffer is smaller than the %u bytes asked (continuing)\n",
                RECV_BUFFER);
    int one = 1;
    // a full socket buffer drops notifications silently (the batch verdicts
    // release those packets with the next one) instead of failing recv
    if (setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one) != 0) {
        fprintf(stderr, "link_delay: cannot set NETLINK_NO_ENOBUFS: %s\n", strerror(errno));
        return 1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        fprintf(stderr, "link_delay: cannot make the queue socket non-blocking: %s\n", strerror(errno));
        return 1;
    }

    // SIGTERM and SIGINT only while waiting in ppoll: the loop never stops mid-batch
    sigset_t block, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    if (sigprocmask(SIG_BLOCK, &block, &wait_mask) != 0) {
        perror("link_delay: sigprocmask");
        return 1;
    }
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    if (sigemptyset(&sa.sa_mask) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) {
        perror("link_delay: sigaction");
        return 1;
    }
    printf("link_delay: queue %ld bound, holding each packet %.3f ms\n", queue, (double)delay_ns / 1e6);
    if (fflush(stdout) != 0) {
        perror("link_delay: stdout");
        return 1;
    }

    static char buf[65536];
    while (!stop_signal) {
        int64_t wait_ns = release_due(&d);
        struct timespec ts = {wait_ns / 1000000000, wait_ns % 1000000000};
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = ppoll(&p, 1, wait_ns < 0 ? NULL : &ts, &wait_mask);
        if (r < 0) {
            if (errno == EINTR) continue;
            perror("link_delay: ppoll");
            return 1;
        }
        if (r == 0) continue;
        for (;;) {
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                if (errno == EINTR || errno == ENOBUFS) continue;
                perror("link_delay: recv");
                return 1;
            }
            if (n == 0) break;
            if (nfq_handle_packet(h, buf, (int)n) != 0 && d.bad_messages++ == 0)
                fprintf(stderr, "link_delay: a message from the queue could not be handled: %s (counted from now on)\n",
                        strerror(errno));
        }
    }
    if (d.have_id) release_through(&d, d.newest_id);
    fprintf(stderr,
            "link_delay: queue %ld: %llu packets held %.3f ms each in %llu releases; late by %.1f us on average, "
            "%.1f us at most; %llu ring overflows, %llu messages not handled; stopped by signal %d\n",
            queue, (unsigned long long)d.packets, (double)delay_ns / 1e6, (unsigned long long)d.releases,
            d.timed ? (double)d.late_sum_ns / 1e3 / (double)d.timed : 0.0, (double)d.late_max_ns / 1e3,
            (unsigned long long)d.full, (unsigned long long)d.bad_messages, (int)stop_signal);
    // no nfq_destroy_queue: after verdicts its unbind fails (ENOENT, the
    // library's reply matching); closing the socket unbinds the queue
    if (nfq_close(h) != 0) fprintf(stderr, "link_delay: closing the queue handle failed (exiting anyway)\n");
    return 0;
}
