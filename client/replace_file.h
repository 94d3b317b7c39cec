// Writing a file whole or not at all, safely in a directory others can
// write to. The bytes go to a temporary beside the file, `<path>.tmp.XXXXXX`,
// which mkostemp creates exclusively (O_CREAT | O_EXCL, mode 0600): never an
// existing file and never through a symlink planted at its name. Commit then
// renames it over `path`, which replaces a symlink at `path` rather than
// writing where it points. A reader sees the old file or the whole new one.
//
// A FileReplacement is used by one thread; it touches the file system only.
#ifndef IRONTUNE_CLIENT_REPLACE_FILE_H_
#define IRONTUNE_CLIENT_REPLACE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace irontune {

class FileReplacement {
 public:
  // Creates the temporary for `path`; status() says whether it could.
  // REQUIRES: `path`'s directory exists.
  explicit FileReplacement(std::string path);
  // Removes the temporary unless Commit succeeded.
  ~FileReplacement();
  FileReplacement(const FileReplacement&) = delete;
  FileReplacement& operator=(const FileReplacement&) = delete;

  // OK, or the first error so far, naming the file.
  const absl::Status& status() const { return status_; }

  // Appends `bytes`; false (and does nothing) once status() is an error.
  bool Append(absl::string_view bytes);

  // Gives the file the mode a new file would get (0666 less the umask),
  // syncs and closes it, and renames it over `path`. Returns status(), or
  // the error of these steps (DataLoss, naming the file); on an error the
  // temporary is removed and `path` is left as it was.
  absl::Status Commit();

 private:
  // Records the first error: `what` failed with errno `error`.
  void Failed(const std::string& what, int error);

  const std::string path_;
  std::string temporary_;
  int fd_ = -1;
  bool committed_ = false;
  absl::Status status_;
};

// Replaces `path` with `text` through a FileReplacement.
absl::Status ReplaceFile(const std::string& path, absl::string_view text);

}  // namespace irontune

#endif  // IRONTUNE_CLIENT_REPLACE_FILE_H_
