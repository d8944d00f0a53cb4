// Whether an error message may quote the content of the file it is about.
//
// acceld reads files on behalf of RPC clients that may have no right to read them (a client
// token is not the daemon's uid; docs/rpc.md, "What acceld reads on a client's behalf"). An
// error about such a file that quoted it would hand its content to the client: `job_file:
// /etc/shadow` answered with the first line. So the readers take an Echo: kContent for files
// the caller could read anyway (accelctl on the user's own files, texts the client sent), and
// kPositionsOnly for files acceld opened itself, whose errors carry the path, line:column,
// our own key names and words, and never a value, an unknown key's name or a parser's excerpt.
#pragma once

namespace accel {

enum class Echo { kContent, kPositionsOnly };

}  // namespace accel
