/* The transport contract of a cross-process communicator: how one rank's bytes reach the
 * others' (tsr_comm_create_with_transport in hal.h).
 *
 * The HAL runs every collective on top of these byte-level primitives, with its own fixed
 * reduction order (hal.h, "Determinism"), so a transport never reduces anything and every
 * transport gives the same numbers. Tessera's own MPI transport implements this table
 * (runtime/src/comm_mpi.cpp); a framework with its own store or launcher can implement it
 * too.
 *
 * Every entry is blocking and is called from one HAL thread per communicator at a time,
 * in the same order on every rank (the HAL guarantees the order; the transport must keep
 * it). Each must return by `deadline_ns` (CLOCK_MONOTONIC nanoseconds; UINT64_MAX: no
 * deadline) with DEADLINE_EXCEEDED naming what it waited for, rather than block forever
 * on a peer that died. Host pointers only: the HAL stages device memory.
 *
 * Versioning as hal_driver.h: struct_size, fields only appended; this header must compile
 * as C99 and as C++.
 */
#ifndef TESSERA_HAL_TRANSPORT_H_
#define TESSERA_HAL_TRANSPORT_H_

#include "tessera/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tsr_comm_transport_v1 {
  uint32_t struct_size; /* sizeof(tsr_comm_transport_v1) as compiled by the transport */
  const char *name;     /* "mpi": tsr_comm_transport_name reports it */
  uint32_t rank;        /* this process's rank */
  uint32_t size;        /* ranks in the group; rank < size */

  /* MPI_Allgather: recv[r * bytes ...] = send of rank r. */
  tsr_status_t (*all_gather)(void *ctx, const void *send, void *recv, size_t bytes,
                             uint64_t deadline_ns);
  /* MPI_Alltoall: send[r * bytes ...] goes to rank r; recv[r * bytes ...] came from r. */
  tsr_status_t (*all_to_all)(void *ctx, const void *send, void *recv, size_t bytes,
                             uint64_t deadline_ns);
  /* MPI_Send / MPI_Recv of `bytes` to / from `peer` (!= rank), matched in order. */
  tsr_status_t (*send)(void *ctx, uint32_t peer, const void *data, size_t bytes,
                       uint64_t deadline_ns);
  tsr_status_t (*recv)(void *ctx, uint32_t peer, void *data, size_t bytes,
                       uint64_t deadline_ns);
  /* MPI_Comm_split: a new transport for the ranks of the same colour, ordered by
   * (key, rank); color < 0 gives *out_table = NULL. Called on every rank. May be NULL
   * (tsr_comm_split then answers UNIMPLEMENTED). */
  tsr_status_t (*split)(void *ctx, int32_t color, int32_t key,
                        const tsr_comm_transport_v1 **out_table, void **out_ctx,
                        uint64_t deadline_ns);
  /* Makes every blocked and later call of this transport return ABORTED soon; may be
   * called from any thread, concurrently with the others. */
  void (*abort)(void *ctx);
  /* Frees ctx; nothing is called after it. */
  void (*destroy)(void *ctx);
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_HAL_TRANSPORT_H_ */
