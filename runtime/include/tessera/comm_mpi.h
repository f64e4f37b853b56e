/* Collectives across processes bootstrapped through MPI (hal.h "Collectives").
 *
 * Two ways for the ranks of an MPI communicator to form a Tessera communicator:
 *   "shm": MPI only for the meeting (rank 0 makes a tsr_comm_unique_id, MPI_Bcast, every
 *          rank calls tsr_comm_create_rank); bytes then move over shared memory, so every
 *          rank must be on this node.
 *   "mpi": bytes move through MPI itself (tsr_comm_create_with_transport over the table of
 *          tsr_comm_mpi_transport): works across nodes. MPI must have been initialised
 *          with MPI_THREAD_MULTIPLE, since the HAL calls the table from its progress thread
 *          while the application keeps using MPI on its own threads.
 * Either way the HAL reduces (hal.h "Determinism"): the numbers are bitwise those of the
 * in-process path. This header needs <mpi.h>; link tessera_comm_mpi (built when CMake
 * finds MPI and TESSERA_WITH_MPI is ON).
 */
#ifndef TESSERA_COMM_MPI_H_
#define TESSERA_COMM_MPI_H_

#include "tessera/hal.h"
#include "tessera/hal_transport.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over `mpi_comm` (every rank calls it): this process's rank of a new
 * communicator on `device`, with Tessera rank = MPI rank. `transport` is "shm" or "mpi"
 * (anything else: INVALID_ARGUMENT). Failures are reported on every rank where MPI lets
 * the ranks tell each other (a rank 0 that cannot make the id), else by the HAL's own
 * DEADLINE_EXCEEDED. */
tsr_status_t tsr_comm_create_mpi(tsr_device_t device, MPI_Comm mpi_comm, const char *transport,
                                 tsr_comm_t *out_comm);

/* The hal_transport.h table over a duplicate of `mpi_comm` (collective over it), for
 * tsr_comm_create_with_transport, which takes ownership of *out_ctx; or to drive the table
 * directly (call its destroy). Non-blocking MPI calls polled with MPI_Test, so every entry
 * honours its deadline and abort. After an entry fails with DEADLINE_EXCEEDED or ABORTED
 * the MPI communicator may hold an unfinished collective, so every later call fails with
 * the same status. */
tsr_status_t tsr_comm_mpi_transport(MPI_Comm mpi_comm, const tsr_comm_transport_v1 **out_table,
                                    void **out_ctx);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_COMM_MPI_H_ */
