// Preloaded (node --import) into the MCP everything server started with
// PORT=0 by the tests: prints the port the system chose, which the server
// itself does not tell, as "lambdaclaw-test-port <port>" on stderr.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    process.stderr.write(`lambdaclaw-test-port ${this.address().port}\n`);
  });
  return listen.apply(this, args);
};
