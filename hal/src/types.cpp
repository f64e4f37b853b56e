// Names and sizes of the ABI's value types (tsr_type_t) and names of reductions
// (tsr_reduce_op_t), for messages, tools, drivers and the collectives.
//
// Part of tessera_hal_base (linked by plugin drivers too): it must never depend on anything
// else in the HAL.
#include "tessera/hal.h"

extern "C" {

const char *tsr_type_name(tsr_type_t type) {
  switch (type) {
  case TSR_TYPE_BUFFER:
    return "buffer";
  case TSR_TYPE_I8:
    return "i8";
  case TSR_TYPE_I16:
    return "i16";
  case TSR_TYPE_I32:
    return "i32";
  case TSR_TYPE_I64:
    return "i64";
  case TSR_TYPE_F16:
    return "f16";
  case TSR_TYPE_BF16:
    return "bf16";
  case TSR_TYPE_F32:
    return "f32";
  case TSR_TYPE_F64:
    return "f64";
  }
  return "invalid";
}

size_t tsr_type_size(tsr_type_t type) {
  switch (type) {
  case TSR_TYPE_I8:
    return 1;
  case TSR_TYPE_I16:
  case TSR_TYPE_F16:
  case TSR_TYPE_BF16:
    return 2;
  case TSR_TYPE_I32:
  case TSR_TYPE_F32:
    return 4;
  case TSR_TYPE_I64:
  case TSR_TYPE_F64:
    return 8;
  case TSR_TYPE_BUFFER:
    return 0;
  }
  return 0;
}

const char *tsr_reduce_op_name(tsr_reduce_op_t op) {
  switch (op) {
  case TSR_REDUCE_SUM:
    return "sum";
  case TSR_REDUCE_PROD:
    return "prod";
  case TSR_REDUCE_MIN:
    return "min";
  case TSR_REDUCE_MAX:
    return "max";
  case TSR_REDUCE_AVG:
    return "avg";
  case TSR_REDUCE_UMIN:
    return "umin";
  case TSR_REDUCE_UMAX:
    return "umax";
  }
  return "invalid";
}

} // extern "C"
