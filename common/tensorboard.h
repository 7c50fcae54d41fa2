// TensorBoard event files, written by hand (no TensorFlow, no protobuf library): a file
// `events.out.tfevents.<unix time>.<hostname>.<pid>` holds TFRecord frames
//   uint64 length (LE) | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// whose data are serialized tensorflow.Event protos (tensorflow/core/util/event.proto,
// summary.proto): the first says file_version "brain.Event:2", the others carry scalars
// (Summary.Value.simple_value, a float) at a step. Torch-free.
#ifndef GMLP_COMMON_TENSORBOARD_H_
#define GMLP_COMMON_TENSORBOARD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): Crc32c("123456789") = 0xE3069283.
uint32_t Crc32c(absl::string_view data);
// TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskedCrc32c(absl::string_view data);
// One TFRecord frame around `data`.
std::string TfRecordFrame(absl::string_view data);

using Scalars = std::vector<std::pair<std::string, double>>;  // tag, value

// Serialized Event protos.
std::string FileVersionEvent(double wall_time);
std::string ScalarsEvent(double wall_time, int64_t step, const Scalars& scalars);
// SessionLog{status: START} at `step`: TensorBoard then drops what earlier files logged at steps
// >= `step` (EventAccumulator's restart purge), as a resumed run recomputes those steps.
std::string StartEvent(double wall_time, int64_t step);

class EventWriter {
 public:
  // Creates `dir` (and its parents) and a new event file in it, and writes the file_version
  // event. The name's time is the start time, or one second after the newest event file already
  // in `dir` when that is not earlier (a quick resume): TensorBoard reads a directory's files in
  // name order, so the names sort in the order the files were written.
  static absl::StatusOr<std::unique_ptr<EventWriter>> Open(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // One event with these scalars at `step` (values are stored as float32).
  absl::Status WriteScalars(int64_t step, const Scalars& scalars);
  // A restart marker (StartEvent) at `step`.
  absl::Status WriteStart(int64_t step);

  const std::string& path() const { return path_; }

 private:
  EventWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // Appends one framed record with a single write(2) (looping on short writes), unbuffered, so a
  // live TensorBoard sees it at once. The file is append-only: a crash or a full disk leaves
  // whole records followed by at most one torn one, which TensorBoard's reader stops before.
  absl::Status Append(absl::string_view event);

  std::string path_;
  int fd_;
};

}  // namespace gmlp

#endif  // GMLP_COMMON_TENSORBOARD_H_
