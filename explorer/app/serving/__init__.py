"""What serves every session: which model a session looks at (`session`), the models shared within a memory budget
(`registry`, `lru`, `catalog`, `build`), the Runs' results kept for the tabs (`kept`), the cores a request computes
with (`cores`), every model computation through spaces.GPU (`compute`), the caps and the messages a person is told
(`limits`, `errors`), how every handler reports a failure (`handlers`), and the refusal of uploads
(`upload_guard`)."""
