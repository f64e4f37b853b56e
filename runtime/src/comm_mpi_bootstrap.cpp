// tsr_comm_create_mpi (tessera/comm_mpi.h): the ranks of an MPI communicator agree on
// their arguments, then meet over shared memory ("shm": a unique id broadcast from rank 0)
// or over MPI itself ("mpi": the table of comm_mpi.cpp).
//
// A separate object from the table so that a program that only drives the table needs no
// HAL communicator code. Must never leave one rank waiting in MPI for another that already
// returned: every rank takes part in the same MPI calls whatever its own arguments were.
#include "tessera/comm_mpi.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum : int32_t { kBadArgs = 0, kShm = 1, kMpi = 2 };

int32_t transportCode(const char *transport) {
  if (transport && std::strcmp(transport, "shm") == 0)
    return kShm;
  if (transport && std::strcmp(transport, "mpi") == 0)
    return kMpi;
  return kBadArgs;
}

// What rank 0 broadcasts for "shm": the id, or why it could not make one.
struct IdMessage {
  int32_t code = 0;
  char text[256] = {};
  tsr_comm_unique_id_t id{};
};

tsr_status_t shmBootstrap(tsr_device_t device, MPI_Comm comm, int rank, int size, tsr_comm_t *out) {
  IdMessage msg;
  if (rank == 0) {
    tsr_status_t st = tsr_comm_unique_id(&msg.id);
    msg.code = int32_t(tsr_status_code(st));
    std::snprintf(msg.text, sizeof(msg.text), "%s", st ? tsr_status_message(st) : "");
    tsr_status_free(st);
  }
  int rc = MPI_Bcast(&msg, int(sizeof(msg)), MPI_BYTE, 0, comm);
  if (rc != MPI_SUCCESS)
    return tsr_status_make(TSR_INTERNAL, "tsr_comm_create_mpi: MPI_Bcast of the id failed");
  if (msg.code != TSR_OK)
    return tsr_status_make(tsr_status_code_t(msg.code),
                           "tsr_comm_create_mpi: rank 0 could not make the unique id: %s",
                           msg.text);
  return tsr_comm_create_rank(device, &msg.id, uint32_t(size), uint32_t(rank), out);
}

} // namespace

extern "C" tsr_status_t tsr_comm_create_mpi(tsr_device_t device, MPI_Comm mpi_comm,
                                            const char *transport, tsr_comm_t *out_comm) {
  if (!out_comm)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "tsr_comm_create_mpi: out_comm is NULL");
  *out_comm = nullptr;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return tsr_status_make(TSR_FAILED_PRECONDITION,
                           "tsr_comm_create_mpi: MPI is not initialised (MPI_Init_thread)");
  if (mpi_comm == MPI_COMM_NULL)
    return tsr_status_make(TSR_INVALID_ARGUMENT, "tsr_comm_create_mpi: mpi_comm is NULL");
  int rank = 0, size = 0;
  MPI_Comm_rank(mpi_comm, &rank);
  MPI_Comm_size(mpi_comm, &size);

  // Every rank learns every rank's verdict on its own arguments, so that a bad device or
  // transport name on one rank fails all of them instead of leaving the others waiting.
  int32_t mine = device ? transportCode(transport) : kBadArgs;
  std::vector<int32_t> all(size_t(size), kBadArgs);
  if (MPI_Allgather(&mine, 1, MPI_INT32_T, all.data(), 1, MPI_INT32_T, mpi_comm) != MPI_SUCCESS)
    return tsr_status_make(TSR_INTERNAL, "tsr_comm_create_mpi: MPI_Allgather failed");
  for (int r = 0; r < size; ++r) {
    if (all[size_t(r)] == kBadArgs)
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "tsr_comm_create_mpi: rank %d passed %s (transport must be "
                             "\"shm\" or \"mpi\", device non-NULL)",
                             r, r == rank && !device ? "a NULL device" : "bad arguments");
    if (all[size_t(r)] != all[0])
      return tsr_status_make(TSR_INVALID_ARGUMENT,
                             "tsr_comm_create_mpi: rank %d asked for transport \"%s\", rank 0 "
                             "for \"%s\"",
                             r, all[size_t(r)] == kShm ? "shm" : "mpi",
                             all[0] == kShm ? "shm" : "mpi");
  }
  if (mine == kShm)
    return shmBootstrap(device, mpi_comm, rank, size, out_comm);
  const tsr_comm_transport_v1 *table = nullptr;
  void *ctx = nullptr;
  if (tsr_status_t st = tsr_comm_mpi_transport(mpi_comm, &table, &ctx))
    return st;
  return tsr_comm_create_with_transport(device, table, ctx, out_comm);
}
