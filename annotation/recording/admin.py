"""Django admin for the recording side: items, takes and reviews."""

from django.contrib import admin

from annotation.recording.models import Item, Review, Take


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("external_id", "scenario", "target_emotion", "target_intensity", "state", "split")
    list_filter = ("scenario", "state", "split", "target_emotion")
    search_fields = ("external_id", "text")


@admin.register(Take)
class TakeAdmin(admin.ModelAdmin):
    list_display = ("public_id", "item", "status", "duration_seconds", "created_at")
    list_filter = ("status",)


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("take", "verdict", "submitted_at")
    list_filter = ("verdict",)
