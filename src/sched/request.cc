#include "sched/request.h"

namespace xinfer {

const char* RequestStatusName(RequestStatus status) {
  switch (status) {
    case RequestStatus::kWaiting:
      return "WAITING";
    case RequestStatus::kRunning:
      return "RUNNING";
    case RequestStatus::kPreempted:
      return "PREEMPTED";
    case RequestStatus::kFinishedStopped:
      return "FINISHED_STOPPED";
    case RequestStatus::kFinishedLength:
      return "FINISHED_LENGTH";
    case RequestStatus::kFinishedAborted:
      return "FINISHED_ABORTED";
  }
  return "?";
}

bool IsFinished(RequestStatus status) {
  return status == RequestStatus::kFinishedStopped || status == RequestStatus::kFinishedLength ||
         status == RequestStatus::kFinishedAborted;
}

}  // namespace xinfer
